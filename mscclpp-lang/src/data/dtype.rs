//! Element types of collective buffers.

use half::{bf16, f16};
use serde::{Deserialize, Serialize};

/// An element type the executor supports (the data types its kernels are compiled for).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DataType {
    /// IEEE half precision.
    F16,
    /// bfloat16.
    Bf16,
    /// IEEE single precision.
    F32,
    /// Signed 32-bit integer.
    I32,
    /// Unsigned 32-bit integer.
    U32,
    /// Unsigned byte.
    U8,
}

impl DataType {
    /// Every element type, in a stable order.
    pub const ALL: [DataType; 6] =
        [DataType::F16, DataType::Bf16, DataType::F32, DataType::I32, DataType::U32, DataType::U8];

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DataType::F16 | DataType::Bf16 => 2,
            DataType::F32 | DataType::I32 | DataType::U32 => 4,
            DataType::U8 => 1,
        }
    }

    /// Short name (`f16`, `bf16`, `f32`, `i32`, `u32`, `u8`).
    pub fn as_str(self) -> &'static str {
        match self {
            DataType::F16 => "f16",
            DataType::Bf16 => "bf16",
            DataType::F32 => "f32",
            DataType::I32 => "i32",
            DataType::U32 => "u32",
            DataType::U8 => "u8",
        }
    }

    /// Whether the type is a floating-point type.
    pub fn is_float(self) -> bool {
        matches!(self, DataType::F16 | DataType::Bf16 | DataType::F32)
    }

    /// Largest magnitude up to which every integer is exactly representable (and arithmetic on such integers is
    /// exact).
    pub fn exact_limit(self) -> u64 {
        match self {
            DataType::F16 => 1 << 11,
            DataType::Bf16 => 1 << 8,
            DataType::F32 => 1 << 24,
            DataType::I32 => (1 << 31) - 1,
            DataType::U32 => u32::MAX as u64,
            DataType::U8 => u8::MAX as u64,
        }
    }

    /// Reads one element (little endian) as `f64`. `bytes` must hold at least [`DataType::size`] bytes; missing
    /// bytes read as zero.
    pub fn decode(self, bytes: &[u8]) -> f64 {
        let mut b = [0u8; 4];
        let n = self.size().min(bytes.len());
        b[..n].copy_from_slice(&bytes[..n]);
        match self {
            DataType::F16 => f16::from_le_bytes([b[0], b[1]]).to_f64(),
            DataType::Bf16 => bf16::from_le_bytes([b[0], b[1]]).to_f64(),
            DataType::F32 => f32::from_le_bytes(b) as f64,
            DataType::I32 => i32::from_le_bytes(b) as f64,
            DataType::U32 => u32::from_le_bytes(b) as f64,
            DataType::U8 => b[0] as f64,
        }
    }

    /// Writes one element (little endian), rounding to the type (integers wrap). A shorter `out` gets the first
    /// bytes of the element.
    pub fn encode(self, value: f64, out: &mut [u8]) {
        let mut element = [0u8; 4];
        let element = &mut element[..self.size()];
        self.encode_each(element, |_| value);
        let n = element.len().min(out.len());
        out[..n].copy_from_slice(&element[..n]);
    }

    /// Writes element `i` of `out` as `value(i)` for every whole element of `out`, each as [`DataType::encode`]
    /// writes one (a trailing partial element is left as is). The type is matched once for the whole buffer, not
    /// per element: the fill patterns and reference results go through here, gigabytes at a time.
    pub fn encode_each(self, out: &mut [u8], value: impl Fn(u64) -> f64) {
        fn each<const N: usize>(out: &mut [u8], element: impl Fn(u64) -> [u8; N]) {
            for (i, chunk) in out.chunks_exact_mut(N).enumerate() {
                chunk.copy_from_slice(&element(i as u64));
            }
        }
        match self {
            DataType::F16 => each(out, |i| f16::from_f64(value(i)).to_le_bytes()),
            DataType::Bf16 => each(out, |i| bf16::from_f64(value(i)).to_le_bytes()),
            DataType::F32 => each(out, |i| (value(i) as f32).to_le_bytes()),
            DataType::I32 => each(out, |i| ((value(i) as i64) as i32).to_le_bytes()),
            DataType::U32 => each(out, |i| ((value(i) as i64) as u32).to_le_bytes()),
            DataType::U8 => each(out, |i| [(value(i) as i64) as u8]),
        }
    }
}

impl std::fmt::Display for DataType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for DataType {
    type Err = crate::ParseError;
    fn from_str(s: &str) -> Result<Self, crate::ParseError> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "f16" | "fp16" | "float16" | "half" => DataType::F16,
            "bf16" | "bfloat16" => DataType::Bf16,
            "f32" | "fp32" | "float32" | "float" => DataType::F32,
            "i32" | "int32" | "int" => DataType::I32,
            "u32" | "uint32" => DataType::U32,
            "u8" | "uint8" | "byte" => DataType::U8,
            _ => {
                return Err(crate::ParseError::Unknown {
                    what: "data type",
                    input: s.to_string(),
                    expected: "one of f16, bf16, f32, i32, u32, u8".into(),
                });
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_every_type() {
        for t in DataType::ALL {
            let mut b = vec![0u8; t.size()];
            t.encode(17.0, &mut b);
            assert_eq!(t.decode(&b), 17.0, "{t}");
            assert_eq!(t.as_str().parse::<DataType>(), Ok(t));
        }
    }
}
