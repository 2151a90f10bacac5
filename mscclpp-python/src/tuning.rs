//! `mscclpp.tune` and `mscclpp.get_tuned_config`: the autotuner of `mscclpp tune`, run on a `CommGroup`, and the
//! row of the machine's tuned table that selection follows. Both return JSON text that the Python package turns
//! into dictionaries.

use std::time::Duration;

use mscclpp_exec::tune::{self, TuneConfig};
use mscclpp_lang::registry;
use pyo3::prelude::*;

use crate::buffer::data_type;
use crate::comm::CommGroup;
use crate::errors::{err, guard, guard_detached};
use crate::types::collective;

fn to_json(value: serde_json::Value) -> crate::errors::Res<String> {
    serde_json::to_string(&value).map_err(|e| err(format!("serializing the result: {e}")))
}

/// Tune `collectives` over `sizes` (bytes; default: powers of two from 1 KiB to 1 GiB) on `comm`, save the rows in
/// this machine's tuned table and install it. Collective: every rank calls it with the same arguments.
#[pyfunction]
#[pyo3(signature = (comm, collectives=None, sizes=None, dtype=None, inplace=false, budget_s=None, runs=None,
                    iters=None))]
#[allow(clippy::too_many_arguments)]
fn _tune_json(
    py: Python<'_>,
    comm: &CommGroup,
    collectives: Option<Vec<String>>,
    sizes: Option<Vec<u64>>,
    dtype: Option<&Bound<'_, PyAny>>,
    inplace: bool,
    budget_s: Option<f64>,
    runs: Option<u32>,
    iters: Option<u32>,
) -> PyResult<String> {
    let mut config = TuneConfig::default();
    if let Some(names) = collectives {
        config.collectives = guard(|| names.iter().map(|n| collective(n)).collect())?;
    }
    if let Some(s) = sizes {
        if s.is_empty() || s.contains(&0) {
            return guard(|| Err(err("sizes: give a non-empty list of message sizes in bytes, each above 0")));
        }
        config.sizes = s;
    }
    if let Some(d) = dtype {
        config.dtype = data_type(d)?.lang();
    }
    config.inplace = inplace;
    if let Some(b) = budget_s {
        if !(b.is_finite() && b > 0.0) {
            return guard(|| Err(err(format!("budget_s {b}: give a positive number of seconds"))));
        }
        config.budget = Some(Duration::from_secs_f64(b));
    }
    if let Some(r) = runs {
        config.runs = r.max(1);
    }
    if let Some(i) = iters {
        config.iters = i.max(1);
    }
    let state = guard(|| comm.state())?;
    guard_detached(py, move || {
        let outcome = tune::tune(&state.comm, &config, None, &mut |_| {})?;
        let path = tune::save(&state.comm, &outcome)?;
        to_json(serde_json::json!({
            "path": path.display().to_string(),
            "rows": outcome.rows,
            "notes": outcome.notes,
            "stopped_by_budget": outcome.stopped_by_budget,
            "timed": outcome.timed,
            "wrong_results": outcome.wrong_results,
        }))
    })
}

/// The tuned row selection follows for a `collective` of `size` bytes, as JSON (`null` without one). With `comm`,
/// this machine's table for that communicator is loaded first; without it, the table already installed (by
/// `tune`, or by an earlier call with `comm`) is consulted.
#[pyfunction]
#[pyo3(signature = (size, collective_name="allreduce", dtype=None, inplace=false, comm=None))]
fn _tuned_config_json(
    size: u64,
    collective_name: &str,
    dtype: Option<&Bound<'_, PyAny>>,
    inplace: bool,
    comm: Option<&CommGroup>,
) -> PyResult<String> {
    let dtype = match dtype {
        Some(d) => data_type(d)?.lang(),
        None => mscclpp_lang::data::DataType::F16,
    };
    guard(|| {
        let c = collective(collective_name)?;
        if let Some(comm) = comm {
            tune::install_tuned_table(&comm.state()?.comm)?;
        }
        let table = registry::tuned_table();
        let row = table.as_ref().and_then(|t| t.row_for(c, dtype, inplace, size));
        to_json(serde_json::to_value(row).map_err(|e| err(format!("serializing the row: {e}")))?)
    })
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_tune_json, m)?)?;
    m.add_function(wrap_pyfunction!(_tuned_config_json, m)?)?;
    Ok(())
}
