//! The kinds of channel a plan declares and its operations use.

use serde::{Deserialize, Serialize};

/// Channel type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChannelType {
    /// Memory channel: peer pointers over NVLink/PCIe (CUDA IPC).
    Memory,
    /// Port channel: transfers issued by a host proxy.
    Port,
    /// Switch channel: NVLink multicast (NVLS).
    Switch,
}

impl ChannelType {
    /// The JSON name.
    pub fn as_str(self) -> &'static str {
        match self {
            ChannelType::Memory => "memory",
            ChannelType::Port => "port",
            ChannelType::Switch => "switch",
        }
    }
}

impl std::fmt::Display for ChannelType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
