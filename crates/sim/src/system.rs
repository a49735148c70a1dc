//! System descriptions as data: several cards and a host.
//!
//! A [`System`] is 1 to 8 cards, each one of the machine descriptions of [`crate::machine`]
//! (a preset name or an inline description), joined by card links in a topology, plus the
//! link from the host to each card. Every figure is a [`Param`] labelled public or assumed,
//! like the machine files; presets live in `crates/sim/systems/` and are embedded.
//!
//! # Topologies
//! - `pcie_switch`: every card has one full-duplex link to a switch, listed as
//!   `{"from": "cardK", "to": "switch"}`. Card-to-card traffic crosses the sender's link
//!   upwards and the receiver's link downwards; each direction of each link is a resource.
//! - `ring`: card K has a full-duplex link to card K+1 (the last to card 0), listed as
//!   `{"from": "cardK", "to": "cardK+1"}` (either order). Traffic takes the shorter way
//!   round (clockwise on a tie), hop by hop, cut-through: latencies add, bandwidth is the
//!   narrowest link's share.
//!
//! The host link is per card (each card on its own PCIe link to the host): host-to-device
//! and device-to-host traffic of one card use that card's host link, one resource per
//! direction.
//!
//! A link the topology needs and the file does not list is an error naming it.

use crate::machine::{Machine, Param, Status};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Most cards a system may hold: a drawer holds up to 8 (public).
pub const MAX_CARDS: usize = 8;

/// How the cards are joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Topology {
    /// Every card on one PCIe switch.
    PcieSwitch,
    /// A ring of direct card-to-card links.
    Ring,
}

/// Which machine a card is: a preset name or an inline description.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MachineRef {
    /// A built-in preset, by name.
    Preset(String),
    /// A full machine description.
    Inline(Box<Machine>),
}

/// One card of the system.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CardSpec {
    /// A unique name, e.g. `"card0"`.
    pub name: String,
    /// The card's machine description.
    pub machine: MachineRef,
}

/// The host link: bandwidth and latency per direction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostLink {
    /// Bytes per cycle (of the cards' clock) in each direction.
    pub bytes_per_cycle: Param<f64>,
    /// Cycles from the start of a transfer to its first byte arriving.
    pub latency_cycles: Param<u64>,
}

/// A full-duplex link between two endpoints (card names, or `"switch"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CardLink {
    /// One end.
    pub from: String,
    /// The other end.
    pub to: String,
    /// Bytes per cycle in each direction.
    pub bytes_per_cycle: Param<f64>,
    /// Cycles added per traversal of this link.
    pub latency_cycles: Param<u64>,
}

/// A system description. See the module documentation for topologies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct System {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// How the cards are joined.
    pub topology: Param<Topology>,
    /// The cards, in ring (or switch port) order.
    pub cards: Param<Vec<CardSpec>>,
    /// Each card's link to the host.
    pub host_link: HostLink,
    /// The card links the topology needs.
    pub card_links: Vec<CardLink>,
    /// The cards' machines, resolved from `cards` by validation.
    #[serde(skip)]
    machines: Vec<Machine>,
}

/// A parse or validation error; `location` is the offending field's path (`cards[2].machine`)
/// or, for JSON syntax, `line L column C`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemError {
    pub location: String,
    pub message: String,
}

impl fmt::Display for SystemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "system description, {}: {}", self.location, self.message)
    }
}

impl std::error::Error for SystemError {}

fn err(location: impl Into<String>, message: impl Into<String>) -> SystemError {
    SystemError {
        location: location.into(),
        message: message.into(),
    }
}

const PRESETS: &[(&str, &str)] = &[
    ("drawer8", include_str!("../systems/drawer8.json")),
    ("ring4", include_str!("../systems/ring4.json")),
];

/// The name a card link uses for the switch of a `pcie_switch` system.
pub const SWITCH: &str = "switch";

const MIN_RATE: f64 = 1e-3;
const MAX_RATE: f64 = 1e12;
const MAX_LATENCY: u64 = 1 << 40;

/// One direction of one link: the unit of bandwidth sharing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Channel(pub usize);

/// A route between two cards: the channels crossed and the latency they add.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CardRoute {
    /// Channels in order (empty from a card to itself).
    pub channels: Vec<Channel>,
    /// Sum of the links' latencies.
    pub latency_cycles: u64,
}

impl System {
    /// Names of the built-in systems.
    pub fn preset_names() -> Vec<&'static str> {
        PRESETS.iter().map(|(n, _)| *n).collect()
    }

    /// A built-in system by name (`None` if unknown).
    pub fn preset(name: &str) -> Option<System> {
        PRESETS
            .iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, text)| System::from_json(text).ok())
    }

    /// A system of `n` cards of `machine` behind one PCIe switch, with the links of the
    /// `drawer8` preset (what a run with `--tp N` and no system file uses).
    pub fn switch_of(machine: &Machine, n: usize) -> Result<System, SystemError> {
        let base = System::preset("drawer8")
            .ok_or_else(|| err("preset", "the built-in drawer8 system does not load"))?;
        let link = base
            .card_links
            .first()
            .cloned()
            .ok_or_else(|| err("card_links", "drawer8 lists no links"))?;
        let mut s = System {
            name: format!("{}x{n}", machine.name),
            description: format!("{n} {} cards behind one PCIe switch", machine.name),
            topology: base.topology.clone(),
            cards: Param::new(
                (0..n)
                    .map(|i| CardSpec {
                        name: format!("card{i}"),
                        machine: MachineRef::Inline(Box::new(machine.clone())),
                    })
                    .collect(),
                base.cards.status,
                &base.cards.source,
            ),
            host_link: base.host_link.clone(),
            card_links: (0..n)
                .map(|i| CardLink {
                    from: format!("card{i}"),
                    to: SWITCH.into(),
                    ..link.clone()
                })
                .collect(),
            machines: Vec::new(),
        };
        s.resolve()?;
        Ok(s)
    }

    /// Parses and validates a system description.
    pub fn from_json(text: &str) -> Result<System, SystemError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut s: System = serde_json::from_str(text).map_err(|e| {
            err(
                format!("line {} column {}", e.line(), e.column()),
                e.to_string(),
            )
        })?;
        s.resolve()?;
        Ok(s)
    }

    /// Serialises to pretty JSON (the format [`System::from_json`] reads).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Number of cards.
    pub fn card_count(&self) -> usize {
        self.cards.value.len()
    }

    /// The machine of card `i` (validated).
    pub fn machine(&self, i: usize) -> Option<&Machine> {
        self.machines.get(i)
    }

    /// Checks that `n` cards can be used (a tensor-parallel degree): 1 to the card count,
    /// all of one machine.
    pub fn check_degree(&self, n: usize) -> Result<(), SystemError> {
        if n == 0 {
            return Err(err("tp", "the tensor-parallel degree must be at least 1"));
        }
        if n > self.card_count() {
            return Err(err(
                "cards",
                format!(
                    "tensor parallelism over {n} cards needs {n} cards; system '{}' has {}",
                    self.name,
                    self.card_count()
                ),
            ));
        }
        if let Some(i) = (1..n).find(|&i| self.machines[i] != self.machines[0]) {
            return Err(err(
                format!("cards[{i}].machine"),
                format!(
                    "tensor-parallel shards are identical, so the cards must be too: card {} is '{}', card 0 is '{}'",
                    i, self.machines[i].name, self.machines[0].name
                ),
            ));
        }
        Ok(())
    }

    fn resolve(&mut self) -> Result<(), SystemError> {
        if self.name.trim().is_empty() {
            return Err(err("name", "must not be empty"));
        }
        let cards = &self.cards.value;
        if !(1..=MAX_CARDS).contains(&cards.len()) {
            return Err(err(
                "cards",
                format!(
                    "must list between 1 and {MAX_CARDS} cards (a drawer holds up to 8), got {}",
                    cards.len()
                ),
            ));
        }
        let mut machines = Vec::new();
        for (i, c) in cards.iter().enumerate() {
            if c.name.trim().is_empty() || c.name == SWITCH {
                return Err(err(
                    format!("cards[{i}].name"),
                    format!("must be a non-empty name other than '{SWITCH}'"),
                ));
            }
            if cards[..i].iter().any(|d| d.name == c.name) {
                return Err(err(
                    format!("cards[{i}].name"),
                    format!("duplicate card name '{}'", c.name),
                ));
            }
            let m = match &c.machine {
                MachineRef::Preset(name) => Machine::preset(name).ok_or_else(|| {
                    err(
                        format!("cards[{i}].machine"),
                        format!(
                            "unknown machine preset '{name}' (presets: {})",
                            Machine::preset_names().join(", ")
                        ),
                    )
                })?,
                MachineRef::Inline(m) => {
                    m.validate()
                        .map_err(|e| err(format!("cards[{i}].machine.{}", e.field), e.message))?;
                    (**m).clone()
                }
            };
            machines.push(m);
        }
        check_rate(
            "host_link.bytes_per_cycle",
            self.host_link.bytes_per_cycle.value,
        )?;
        check_latency(
            "host_link.latency_cycles",
            self.host_link.latency_cycles.value,
        )?;
        let known = |e: &str| e == SWITCH || cards.iter().any(|c| c.name == e);
        for (i, l) in self.card_links.iter().enumerate() {
            for (field, end) in [("from", &l.from), ("to", &l.to)] {
                if !known(end) {
                    return Err(err(
                        format!("card_links[{i}].{field}"),
                        format!("unknown endpoint '{end}' (a card name or '{SWITCH}')"),
                    ));
                }
            }
            if l.from == l.to {
                return Err(err(
                    format!("card_links[{i}]"),
                    format!("a link from '{}' to itself", l.from),
                ));
            }
            if self.card_links[..i].iter().any(|k| same_ends(k, l)) {
                return Err(err(
                    format!("card_links[{i}]"),
                    format!("duplicate link {} <-> {}", l.from, l.to),
                ));
            }
            check_rate(
                &format!("card_links[{i}].bytes_per_cycle"),
                l.bytes_per_cycle.value,
            )?;
            check_latency(
                &format!("card_links[{i}].latency_cycles"),
                l.latency_cycles.value,
            )?;
        }
        let n = cards.len();
        for (i, link) in self.card_links.iter().enumerate() {
            let needed = self.required_links().iter().any(|(a, b)| {
                (a == &link.from && b == &link.to) || (a == &link.to && b == &link.from)
            });
            if !needed {
                return Err(err(
                    format!("card_links[{i}]"),
                    format!(
                        "link {} <-> {} is not part of a {} topology of {n} card(s)",
                        link.from,
                        link.to,
                        self.topology_name()
                    ),
                ));
            }
        }
        for (a, b) in self.required_links() {
            if self.link_index(&a, &b).is_none() {
                return Err(err(
                    "card_links",
                    format!(
                        "missing link {a} <-> {b}: a {} topology needs it",
                        self.topology_name()
                    ),
                ));
            }
        }
        self.machines = machines;
        Ok(())
    }

    /// The topology as the system file names it ("pcie_switch" or "ring").
    pub fn topology_name(&self) -> &'static str {
        match self.topology.value {
            Topology::PcieSwitch => "pcie_switch",
            Topology::Ring => "ring",
        }
    }

    /// The links the topology needs, as endpoint pairs.
    fn required_links(&self) -> Vec<(String, String)> {
        let names: Vec<&String> = self.cards.value.iter().map(|c| &c.name).collect();
        let n = names.len();
        match self.topology.value {
            Topology::PcieSwitch => names
                .iter()
                .map(|c| ((*c).clone(), SWITCH.to_string()))
                .collect(),
            Topology::Ring if n == 1 => Vec::new(),
            // Two cards are joined by one link, not two.
            Topology::Ring if n == 2 => vec![(names[0].clone(), names[1].clone())],
            Topology::Ring => (0..n)
                .map(|i| (names[i].clone(), names[(i + 1) % n].clone()))
                .collect(),
        }
    }

    fn link_index(&self, a: &str, b: &str) -> Option<usize> {
        self.card_links
            .iter()
            .position(|l| (l.from == a && l.to == b) || (l.from == b && l.to == a))
    }

    /// Number of channels (link directions), card links first, then host links: two per
    /// card link, then two per card (host-to-device, device-to-host).
    pub fn channel_count(&self) -> usize {
        2 * self.card_links.len() + 2 * self.card_count()
    }

    /// Bandwidth of a channel in bytes per cycle.
    pub fn channel_bandwidth(&self, c: Channel) -> f64 {
        let links = self.card_links.len();
        if c.0 < 2 * links {
            self.card_links[c.0 / 2].bytes_per_cycle.value
        } else {
            self.host_link.bytes_per_cycle.value
        }
    }

    /// A short name of a channel for traces: `card0->switch`, `host->card1`.
    pub fn channel_name(&self, c: Channel) -> String {
        let links = self.card_links.len();
        if c.0 < 2 * links {
            let l = &self.card_links[c.0 / 2];
            if c.0.is_multiple_of(2) {
                format!("{}->{}", l.from, l.to)
            } else {
                format!("{}->{}", l.to, l.from)
            }
        } else {
            let k = (c.0 - 2 * links) / 2;
            let card = self
                .cards
                .value
                .get(k)
                .map(|c| c.name.as_str())
                .unwrap_or("?");
            if c.0.is_multiple_of(2) {
                format!("host->{card}")
            } else {
                format!("{card}->host")
            }
        }
    }

    /// The channel carrying traffic from endpoint `a` to endpoint `b` over their link.
    fn channel(&self, a: &str, b: &str) -> Option<(Channel, u64)> {
        let i = self.link_index(a, b)?;
        let l = &self.card_links[i];
        let dir = usize::from(l.from != a);
        Some((Channel(2 * i + dir), l.latency_cycles.value))
    }

    /// The route from card `src` to card `dst` (indices).
    pub fn route(&self, src: usize, dst: usize) -> Option<CardRoute> {
        let names: Vec<&str> = self.cards.value.iter().map(|c| c.name.as_str()).collect();
        let n = names.len();
        if src >= n || dst >= n {
            return None;
        }
        if src == dst {
            return Some(CardRoute {
                channels: Vec::new(),
                latency_cycles: 0,
            });
        }
        let mut hops: Vec<(Channel, u64)> = Vec::new();
        match self.topology.value {
            Topology::PcieSwitch => {
                hops.push(self.channel(names[src], SWITCH)?);
                hops.push(self.channel(SWITCH, names[dst])?);
            }
            Topology::Ring => {
                let cw = (dst + n - src) % n;
                let ccw = n - cw;
                let (step, count) = if cw <= ccw { (1, cw) } else { (n - 1, ccw) };
                let mut at = src;
                for _ in 0..count {
                    let next = (at + step) % n;
                    hops.push(self.channel(names[at], names[next])?);
                    at = next;
                }
            }
        }
        Some(CardRoute {
            latency_cycles: hops.iter().map(|h| h.1).sum(),
            channels: hops.into_iter().map(|h| h.0).collect(),
        })
    }

    /// The host-to-device (`to_device`) or device-to-host channel of card `card`.
    pub fn host_channel(&self, card: usize, to_device: bool) -> Channel {
        Channel(2 * self.card_links.len() + 2 * card + usize::from(!to_device))
    }

    /// Every figure with its provenance: `(field, value, status, source)`.
    pub fn parameters(&self) -> Vec<(String, String, Status, String)> {
        let mut rows = vec![
            (
                "topology".to_string(),
                self.topology_name().to_string(),
                self.topology.status,
                self.topology.source.clone(),
            ),
            (
                "cards".to_string(),
                self.cards
                    .value
                    .iter()
                    .zip(&self.machines)
                    .map(|(c, m)| format!("{}={}", c.name, m.name))
                    .collect::<Vec<_>>()
                    .join(", "),
                self.cards.status,
                self.cards.source.clone(),
            ),
            (
                "host_link.bytes_per_cycle".to_string(),
                self.host_link.bytes_per_cycle.value.to_string(),
                self.host_link.bytes_per_cycle.status,
                self.host_link.bytes_per_cycle.source.clone(),
            ),
            (
                "host_link.latency_cycles".to_string(),
                self.host_link.latency_cycles.value.to_string(),
                self.host_link.latency_cycles.status,
                self.host_link.latency_cycles.source.clone(),
            ),
        ];
        for l in &self.card_links {
            rows.push((
                format!("{} <-> {} bytes_per_cycle", l.from, l.to),
                l.bytes_per_cycle.value.to_string(),
                l.bytes_per_cycle.status,
                l.bytes_per_cycle.source.clone(),
            ));
            rows.push((
                format!("{} <-> {} latency_cycles", l.from, l.to),
                l.latency_cycles.value.to_string(),
                l.latency_cycles.status,
                l.latency_cycles.source.clone(),
            ));
        }
        rows
    }
}

fn same_ends(a: &CardLink, b: &CardLink) -> bool {
    (a.from == b.from && a.to == b.to) || (a.from == b.to && a.to == b.from)
}

fn check_rate(location: &str, v: f64) -> Result<(), SystemError> {
    if !(v.is_finite() && (MIN_RATE..=MAX_RATE).contains(&v)) {
        return Err(err(
            location,
            format!("must be a number between {MIN_RATE:e} and {MAX_RATE:e}, got {v:e}"),
        ));
    }
    Ok(())
}

fn check_latency(location: &str, v: u64) -> Result<(), SystemError> {
    if v > MAX_LATENCY {
        return Err(err(
            location,
            format!("must be at most {MAX_LATENCY} cycles, got {v}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_load_and_label_every_figure() {
        for name in System::preset_names() {
            let s = System::preset(name).unwrap_or_else(|| panic!("{name}"));
            assert!(s.card_count() >= 1);
            assert!(s.parameters().iter().all(|p| !p.3.is_empty()), "{name}");
        }
        let d = System::preset("drawer8").unwrap();
        assert_eq!(d.card_count(), 8);
        assert_eq!(d.topology.status, Status::Public);
        // No card-to-card bandwidth is public.
        assert!(d
            .card_links
            .iter()
            .all(|l| l.bytes_per_cycle.status == Status::Assumed));
    }

    #[test]
    fn a_missing_link_is_named() {
        let mut v: serde_json::Value =
            serde_json::from_str(include_str!("../systems/ring4.json")).unwrap();
        v["card_links"].as_array_mut().unwrap().remove(2);
        let e = System::from_json(&v.to_string()).unwrap_err();
        assert_eq!(e.location, "card_links");
        assert!(e.message.contains("missing link card2 <-> card3"), "{e}");
    }

    #[test]
    fn bad_values_have_a_location() {
        let text = include_str!("../systems/drawer8.json");
        let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
        v["card_links"][3]["bytes_per_cycle"]["value"] = serde_json::json!(-1.0);
        let e = System::from_json(&v.to_string()).unwrap_err();
        assert_eq!(e.location, "card_links[3].bytes_per_cycle", "{e}");
        let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
        v["cards"]["value"][1]["machine"] = serde_json::json!("nope");
        let e = System::from_json(&v.to_string()).unwrap_err();
        assert_eq!(e.location, "cards[1].machine", "{e}");
        let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
        v["card_links"][0]["to"] = serde_json::json!("card9");
        let e = System::from_json(&v.to_string()).unwrap_err();
        assert_eq!(e.location, "card_links[0].to", "{e}");
        let e = System::from_json("{ \"name\": ").unwrap_err();
        assert!(e.location.starts_with("line 1"), "{e}");
        let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
        let cards = v["cards"]["value"].as_array().unwrap().clone();
        v["cards"]["value"] =
            serde_json::Value::Array(cards.iter().chain(&cards).cloned().collect());
        let e = System::from_json(&v.to_string()).unwrap_err();
        assert_eq!(e.location, "cards");
    }

    #[test]
    fn more_cards_than_the_system_has_is_an_error() {
        let s = System::preset("ring4").unwrap();
        assert!(s.check_degree(4).is_ok());
        let e = s.check_degree(8).unwrap_err();
        assert!(e.message.contains("has 4"), "{e}");
    }

    #[test]
    fn routes_follow_the_topology() {
        let d = System::preset("drawer8").unwrap();
        let r = d.route(1, 5).unwrap();
        assert_eq!(r.channels.len(), 2);
        assert_eq!(d.channel_name(r.channels[0]), "card1->switch");
        assert_eq!(d.channel_name(r.channels[1]), "switch->card5");
        let ring = System::preset("ring4").unwrap();
        let r = ring.route(0, 3).unwrap();
        assert_eq!(r.channels.len(), 1, "the shorter way round");
        assert_eq!(ring.channel_name(r.channels[0]), "card0->card3");
        assert_eq!(ring.route(0, 2).unwrap().channels.len(), 2);
        let s = System::switch_of(&Machine::preset("tiny4").unwrap(), 3).unwrap();
        assert_eq!(s.card_count(), 3);
        assert_eq!(s.channel_name(s.host_channel(2, false)), "card2->host");
    }
}
