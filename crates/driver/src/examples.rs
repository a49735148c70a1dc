//! The example gallery shipped with the playground, compiled into the binary.

use serde::Serialize;

/// A model shipped with the playground.
#[derive(Clone, Debug, Serialize)]
pub struct Example {
    /// Short name (the file name without extension).
    pub name: &'static str,
    /// One line for the gallery.
    pub description: String,
    /// The file's text.
    #[serde(skip)]
    pub source: &'static str,
}

const EXAMPLE_SOURCES: &[(&str, &str)] = &[(
    "matmul_add",
    include_str!("../../../examples/graphs/matmul_add.json"),
)];

/// The example gallery, in display order.
pub fn examples() -> Vec<Example> {
    EXAMPLE_SOURCES
        .iter()
        .map(|(name, source)| Example {
            name,
            description: graph::load_json(source)
                .map(|g| g.description)
                .unwrap_or_default(),
            source,
        })
        .collect()
}
