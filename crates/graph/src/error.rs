//! Errors with a location a person understands.

use serde::{Deserialize, Serialize};

/// Where a problem is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Location {
    /// A position in JSON text: 1-based line and column, and the JSON pointer
    /// (RFC 6901, e.g. `/nodes/1/inputs/0`) of the offending value.
    Json {
        line: usize,
        column: usize,
        pointer: String,
    },
    /// A node of a graph built in memory.
    Node { node: String, op: String },
    /// The graph as a whole (inputs, initializers, outputs, or evaluation inputs).
    Graph,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Json {
                line,
                column,
                pointer,
            } => {
                write!(f, "line {line}, column {column}")?;
                if !pointer.is_empty() {
                    write!(f, " ({pointer})")?;
                }
                Ok(())
            }
            Location::Node { node, op } => write!(f, "node '{node}' ({op})"),
            Location::Graph => f.write_str("graph"),
        }
    }
}

/// A problem with a graph: what is wrong and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphError {
    pub message: String,
    pub location: Location,
}

impl GraphError {
    /// An error about the graph as a whole.
    pub fn graph(message: impl Into<String>) -> Self {
        GraphError {
            message: message.into(),
            location: Location::Graph,
        }
    }

    /// An error about one node.
    pub fn node(node: &str, op: &str, message: impl Into<String>) -> Self {
        GraphError {
            message: message.into(),
            location: Location::Node {
                node: node.to_string(),
                op: op.to_string(),
            },
        }
    }
}

impl std::fmt::Display for GraphError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.location, self.message)
    }
}

impl std::error::Error for GraphError {}
