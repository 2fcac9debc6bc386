//! ranktrace._core: the ingest engine as Python sees it (typed in
//! src/ranktrace/_core.pyi). Two classes; record batches cross as Arrow.

use arrow_pyarrow::ToPyArrow;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use ranktrace_engine::lines_parquet::LinesWriter;
use ranktrace_engine::{compile, compile::Catalog, out, Envelopes, Output};
use std::sync::{Arc, Mutex};

/// A compiled catalog (the JSON spec made by ranktrace.ingest.core).
#[pyclass(frozen)]
struct Engine {
    cat: Arc<Catalog>,
}

#[pymethods]
impl Engine {
    #[new]
    fn new(spec_json: &str) -> PyResult<Engine> {
        Ok(Engine { cat: compile(spec_json).map_err(PyValueError::new_err)? })
    }
}

/// A Parquet file of lines (table event_lines), written by the parser
/// threads that hand it their batches (one sink per thread: the lock is
/// never contended).
#[pyclass(frozen)]
struct LinesSink {
    inner: Mutex<LinesWriter>,
}

#[pymethods]
impl LinesSink {
    #[new]
    #[pyo3(signature = (engine, path, codec=None))]
    fn new(engine: &Engine, path: std::path::PathBuf, codec: Option<&str>) -> PyResult<LinesSink> {
        let w = LinesWriter::create(&path, out::event_schema(&engine.cat), codec).map_err(PyValueError::new_err)?;
        Ok(LinesSink { inner: Mutex::new(w) })
    }

    /// Lines written so far.
    fn rows(&self) -> u64 {
        self.inner.lock().unwrap().rows()
    }

    /// Write the footer (the file is complete), without the GIL; the lines written.
    fn close(&self, py: Python<'_>) -> PyResult<u64> {
        py.detach(|| self.inner.lock().unwrap().close()).map_err(PyValueError::new_err)
    }
}

/// The parse of one file, fed its bytes in chunks.
#[pyclass]
struct FileParser {
    inner: ranktrace_engine::FileParser,
}

type PyBatch<'py> = (Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyDict>);

/// A batch for Python: the events as a record batch, or, when they went
/// into a sink already, their count.
fn to_py<'py>(py: Python<'py>, out: Output, written: Option<usize>) -> PyResult<PyBatch<'py>> {
    let facts = PyDict::new(py);
    for (table, batch) in out.facts {
        facts.set_item(table, batch.to_pyarrow(py)?)?;
    }
    let events = match written {
        Some(n) => n.into_pyobject(py)?.into_any(),
        None => out.events.to_pyarrow(py)?,
    };
    Ok((events, out.classes.to_pyarrow(py)?, facts))
}

#[pymethods]
impl FileParser {
    #[new]
    #[pyo3(signature = (engine, file_id, file, hints, tz, envelopes, max_line))]
    fn new(engine: &Engine, file_id: i64, file: String, hints: Vec<(String, String)>, tz: &str,
           envelopes: Option<Vec<String>>, max_line: usize) -> PyResult<FileParser> {
        let want = match envelopes {
            None => Envelopes::Sniff,
            Some(names) => Envelopes::Named(names),
        };
        let inner = ranktrace_engine::FileParser::new(engine.cat.clone(), file_id, file, &hints, tz, want, max_line)
            .map_err(PyValueError::new_err)?;
        Ok(FileParser { inner })
    }

    /// Frame the lines `chunk` completes (all of them when `eof`), without the GIL.
    fn feed(&mut self, py: Python<'_>, chunk: &Bound<'_, PyBytes>, eof: bool) {
        let data = chunk.as_bytes();
        let inner = &mut self.inner;
        py.detach(|| inner.feed(data, eof));
    }

    /// The next parsed batch (at most 65,536 lines) of what was fed, without the GIL; None when none is left.
    /// With a `sink`, the events are written into it here and the batch gives their count.
    #[pyo3(signature = (sink=None))]
    fn next_batch<'py>(&mut self, py: Python<'py>, sink: Option<&LinesSink>) -> PyResult<Option<PyBatch<'py>>> {
        let inner = &mut self.inner;
        let got = py.detach(|| -> Result<Option<(Output, Option<usize>)>, String> {
            let Some(out) = inner.next_batch() else { return Ok(None) };
            let Some(sink) = sink else { return Ok(Some((out, None))) };
            sink.inner.lock().unwrap().write(&out.events)?;
            let n = out.events.num_rows();
            Ok(Some((out, Some(n))))
        });
        match got.map_err(PyValueError::new_err)? {
            None => Ok(None),
            Some((out, written)) => to_py(py, out, written).map(Some),
        }
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.stats();
        let d = PyDict::new(py);
        d.set_item("bytes", s.bytes)?;
        d.set_item("lines", s.lines)?;
        d.set_item("invalid_utf8", s.invalid_utf8)?;
        d.set_item("nul_bytes", s.nul_bytes)?;
        d.set_item("truncated_lines", s.truncated_lines)?;
        d.set_item("crlf", s.crlf)?;
        d.set_item("cr_only", s.cr_only)?;
        d.set_item("implausible", s.implausible)?;
        let m = self.inner.memo_stats();
        d.set_item("shape_hits", m.hits)?;
        d.set_item("shapes", m.new)?;
        d.set_item("own_reads", m.own)?;
        Ok(d)
    }

    /// Events so far per format name ('raw': claimed by none).
    fn format_counts(&self) -> Vec<(String, u64)> {
        self.inner.format_counts().into_iter().map(|(f, n)| (f.to_string(), n)).collect()
    }

    /// The file-scoped envelopes found in the file's head.
    fn file_envelopes(&self) -> Vec<String> {
        self.inner.file_envelopes()
    }
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Engine>()?;
    m.add_class::<FileParser>()?;
    m.add_class::<LinesSink>()?;
    Ok(())
}
