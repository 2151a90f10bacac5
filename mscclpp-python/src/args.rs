//! Python arguments as the collectives take them: a device address from a tensor, a buffer or an int, and the
//! sizes of a collective checked against each other.

use mscclpp_lang::plan::Collective;
use pyo3::prelude::*;

use crate::buffer::RawGpuBuffer;
use crate::errors::{Res, err, guard};
use crate::types::DataType;

/// A device address from an int, or from an object with `data_ptr()` (a torch tensor, a `RawGpuBuffer`).
pub fn ptr_of(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<u64> {
    if let Ok(b) = obj.cast::<RawGpuBuffer>() {
        return Ok(b.get().buf.ptr());
    }
    // Tensors before ints: a one-element integer tensor also converts to an int (its value, not its address).
    if obj.hasattr("data_ptr")? {
        if let Ok(dev) = obj.getattr("is_cuda")
            && !dev.extract::<bool>().unwrap_or(true)
        {
            return guard(|| Err(err(format!("{what} is not on a CUDA device: move it there first (tensor.cuda())"))));
        }
        return obj.call_method0("data_ptr")?.extract::<u64>();
    }
    if let Ok(v) = obj.extract::<u64>() {
        return Ok(v);
    }
    guard(|| Err(err(format!("{what} must be a device address (int), a CUDA tensor or a RawGpuBuffer"))))
}

/// Input and output sizes that fit the collective on `world` ranks and whole elements of `dtype`.
pub fn check_sizes(collective: Collective, world: usize, input: u64, output: u64, dtype: DataType) -> Res<()> {
    let w = world as u64;
    let elem = dtype.size() as u64;
    if input == 0 {
        return Err(err("input_size is 0: pass the message size in bytes (tensor.numel() * tensor.element_size())"));
    }
    if !input.is_multiple_of(elem) || !output.is_multiple_of(elem) {
        return Err(err(format!(
            "sizes {input} B in and {output} B out are not whole {} elements ({elem} B each)",
            DataType::name(dtype)
        )));
    }
    if collective == Collective::ReduceScatter && !input.is_multiple_of(w) {
        return Err(err(format!("reduce-scatter input of {input} B does not split over {world} ranks")));
    }
    let want = mscclpp_exec::executor::Executor::output_size(collective, w, input);
    if output != want {
        return Err(err(format!(
            "{} of {input} B on {world} ranks writes {want} B, but output_size is {output} B; pass {want}",
            collective.as_str()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_must_fit_the_collective_and_the_element_type() {
        assert!(check_sizes(Collective::AllReduce, 2, 4096, 4096, DataType::float16).is_ok());
        assert!(check_sizes(Collective::AllGather, 4, 1024, 4096, DataType::float32).is_ok());
        assert!(check_sizes(Collective::ReduceScatter, 4, 4096, 1024, DataType::bfloat16).is_ok());
        let msg = |r: Res<()>| match r {
            Err(crate::errors::PyErrKind::General(m)) => m,
            other => panic!("expected a general error, got {other:?}"),
        };
        assert!(msg(check_sizes(Collective::AllReduce, 2, 0, 0, DataType::uint8)).contains("input_size is 0"));
        assert!(msg(check_sizes(Collective::AllReduce, 2, 7, 7, DataType::float16)).contains("whole float16"));
        assert!(msg(check_sizes(Collective::AllGather, 2, 64, 64, DataType::uint8)).contains("pass 128"));
        assert!(msg(check_sizes(Collective::ReduceScatter, 3, 64, 16, DataType::uint8)).contains("does not split"));
    }
}
