//! CUDA graphs captured from a stream.

use cudarc::driver::sys;

use super::{Device, Stream, result};
use crate::error::Result;

/// A CUDA graph captured from a stream and instantiated, ready to replay.
#[derive(Debug)]
pub struct Graph {
    device: Device,
    graph: sys::CUgraph,
    exec: sys::CUgraphExec,
}

// SAFETY: graph handles may be used from any thread that binds the graph's context (every method does).
unsafe impl Send for Graph {}

impl Graph {
    /// Capture the work `record` queues on `stream` (thread-local capture mode) and instantiate it. The work is
    /// not executed; replay it with [`Graph::launch`].
    pub fn capture(stream: &Stream, record: impl FnOnce() -> Result<()>) -> Result<Graph> {
        let device = *stream.device();
        device.bind()?;
        // SAFETY: live stream; thread-local mode only forbids unsafe calls from this thread during capture.
        unsafe {
            result::stream_begin_capture(stream.raw(), sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        }?;
        let recorded = record();
        // SAFETY: the capture was begun on this stream by this thread; ending it is always required.
        let ended = unsafe { result::stream_end_capture(stream.raw()) };
        recorded?;
        let graph = ended?;
        // SAFETY: `graph` is the valid graph just captured.
        match unsafe { result::graph_instantiate(graph) } {
            Ok(exec) => Ok(Graph { device, graph, exec }),
            Err(e) => {
                // SAFETY: destroy the graph we own, once.
                let _ = unsafe { result::graph_destroy(graph) };
                Err(e.into())
            }
        }
    }

    /// Replay the graph on `stream`.
    pub fn launch(&self, stream: &Stream) -> Result<()> {
        self.device.bind()?;
        // SAFETY: live executable graph and stream of the same context.
        Ok(unsafe { result::graph_launch(self.exec, stream.raw()) }?)
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        if !super::context_lost() && self.device.bind().is_ok() {
            // SAFETY: both handles are owned by this value and destroyed once.
            unsafe {
                let _ = result::graph_exec_destroy(self.exec);
                let _ = result::graph_destroy(self.graph);
            }
        }
    }
}
