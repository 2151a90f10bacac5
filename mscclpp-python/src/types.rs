//! `mscclpp.DataType`, `mscclpp.ReduceOp` and their mapping to the registry's and the interpreter's types.

use mscclpp_lang::data::DataType as LangType;
use mscclpp_lang::plan::{Collective, ReduceOp as LangOp};
use mscclpp_sys::interpreter::ElementType;
use pyo3::prelude::*;

use crate::errors::{Res, err};

/// Element type of a buffer.
#[pyclass(module = "mscclpp", eq, eq_int, hash, frozen, from_py_object)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(non_camel_case_types)]
pub enum DataType {
    /// IEEE half precision.
    float16,
    /// bfloat16.
    bfloat16,
    /// IEEE single precision.
    float32,
    /// 32-bit signed integer.
    int32,
    /// 32-bit unsigned integer.
    uint32,
    /// Unsigned byte.
    uint8,
}

#[pymethods]
impl DataType {
    /// Bytes per element.
    #[getter]
    pub(crate) fn size(&self) -> usize {
        self.lang().size()
    }

    fn __repr__(&self) -> String {
        format!("DataType.{}", self.name())
    }
}

impl DataType {
    /// Every type.
    pub const ALL: [DataType; 6] =
        [DataType::float16, DataType::bfloat16, DataType::float32, DataType::int32, DataType::uint32, DataType::uint8];

    /// The Python name.
    pub fn name(self) -> &'static str {
        match self {
            DataType::float16 => "float16",
            DataType::bfloat16 => "bfloat16",
            DataType::float32 => "float32",
            DataType::int32 => "int32",
            DataType::uint32 => "uint32",
            DataType::uint8 => "uint8",
        }
    }

    /// The registry's type.
    pub fn lang(self) -> LangType {
        match self {
            DataType::float16 => LangType::F16,
            DataType::bfloat16 => LangType::Bf16,
            DataType::float32 => LangType::F32,
            DataType::int32 => LangType::I32,
            DataType::uint32 => LangType::U32,
            DataType::uint8 => LangType::U8,
        }
    }

    /// The interpreter's type (the plans' type: one enum).
    pub fn element(self) -> ElementType {
        self.lang()
    }

    /// DLPack type code and bits.
    pub fn dlpack(self) -> (u8, u8) {
        match self {
            DataType::float16 => (2, 16),
            DataType::bfloat16 => (4, 16),
            DataType::float32 => (2, 32),
            DataType::int32 => (0, 32),
            DataType::uint32 => (1, 32),
            DataType::uint8 => (1, 8),
        }
    }
}

/// Reduction operator.
#[pyclass(module = "mscclpp", eq, eq_int, hash, frozen, from_py_object)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(clippy::upper_case_acronyms)]
pub enum ReduceOp {
    /// Sum.
    SUM,
    /// Minimum.
    MIN,
    /// Maximum.
    MAX,
    /// No reduction (MSCCL++'s operator for the collectives that only move data: all-gather, broadcast,
    /// all-to-all). A reducing collective refuses it.
    NOP,
}

#[pymethods]
impl ReduceOp {
    fn __repr__(&self) -> String {
        match self {
            ReduceOp::NOP => "ReduceOp.NOP".to_string(),
            op => format!("ReduceOp.{}", op.lang().as_str().to_uppercase()),
        }
    }
}

impl ReduceOp {
    /// The plan's operator (NOP: the plan has no reduction to set; sum stands in).
    pub fn lang(self) -> LangOp {
        match self {
            ReduceOp::SUM | ReduceOp::NOP => LangOp::Sum,
            ReduceOp::MIN => LangOp::Min,
            ReduceOp::MAX => LangOp::Max,
        }
    }

    /// `Ok` unless `self` is NOP and `collective` reduces.
    pub fn check_for(self, collective: Collective) -> Res<()> {
        if self == ReduceOp::NOP && matches!(collective, Collective::AllReduce | Collective::ReduceScatter) {
            return Err(crate::errors::unsupported(format!(
                "ReduceOp.NOP is for collectives that only move data; a {} needs SUM, MIN or MAX",
                collective.as_str()
            )));
        }
        Ok(())
    }
}

/// A collective from its name (`allreduce`, `all_reduce`, `AllReduce` ...).
pub fn collective(name: &str) -> Res<Collective> {
    use Collective::*;
    name.parse::<Collective>()
        .ok()
        .filter(|c| matches!(c, AllReduce | AllGather | ReduceScatter | Broadcast | AllToAll))
        .ok_or_else(|| {
            err(format!(
                "unknown collective {name:?}: use one of allreduce, allgather, reducescatter, broadcast, alltoall"
            ))
        })
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<DataType>()?;
    m.add_class::<ReduceOp>()?;
    Ok(())
}
