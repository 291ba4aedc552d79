//! `perf --shared-memory system`: input and output tensors in POSIX shared
//! memory registered with the server (Triton's system shared-memory
//! extension, docs/spec/v2-protocol.md, "Shared memory").
//!
//! - every input tensor of every request body (the generated one and one
//!   per `--input-data` entry) is written once, before the load, into one
//!   region at its own offset; requests name region, offset and size
//!   instead of carrying the bytes;
//! - outputs go to output regions, one per request in flight (a slot:
//!   each output at its own offset, `--output-shared-memory-size` bytes
//!   each), so that two requests never share an output buffer; slots are
//!   made before the load for the concurrency known in advance, and more
//!   (registered then) when an open loop has more requests in flight;
//! - after a response the outputs are read from the slot's region;
//! - at the end (and when the run fails after registering) every region is
//!   unregistered from every server and its memory object unlinked; on
//!   SIGINT, SIGTERM or SIGHUP `main.rs` calls [`release_on_signal`].
//!
//! The memory objects are made with `shm_open` (`libc`: the call Triton
//! itself makes with the key it is given, so both name the same object on
//! every POSIX system; on Linux it is a file under `/dev/shm`) and written
//! and read with `pwrite`/`pread` through the file descriptor: no memory
//! mapping on this side, so no `unsafe` beyond the two calls that name the
//! object. Names are `tritonctl_<pid>_<random>_...`, unique per run.

use super::client::{ErrorKind, PerfClient};
use super::inputs::Body;
use bytes::Bytes;
use serde_json::{json, Map, Value};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// perf_analyzer's default `--output-shared-memory-size`, bytes per output
/// (docs/spec/perf-anchors.md, shared memory).
pub const DEFAULT_OUTPUT_SIZE: u64 = 102_400;

/// Where tensors travel (`--shared-memory`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SharedMemory {
    None,
    System,
    Cuda,
}

/// Tensors start at multiples of this in the input region.
const ALIGN: u64 = 64;

/// One POSIX shared-memory object made by this run; unlinked when dropped.
#[derive(Debug)]
struct ShmObject {
    /// `/tritonctl_...`: the name given to `shm_open` (Triton's `key`).
    key: String,
    file: File,
    size: u64,
}

impl ShmObject {
    fn create(key: &str, size: u64) -> Result<Self, String> {
        use std::os::fd::FromRawFd;
        let c = std::ffi::CString::new(key).map_err(|_| format!("bad key {key}"))?;
        // SAFETY: `c` is a valid NUL-terminated string; the descriptor
        // returned is owned by the `File` made from it below.
        let fd = unsafe {
            libc::shm_open(
                c.as_ptr(),
                libc::O_CREAT | libc::O_EXCL | libc::O_RDWR,
                0o600 as libc::mode_t,
            )
        };
        if fd < 0 {
            return Err(format!(
                "cannot create the shared-memory object {key}: {}",
                std::io::Error::last_os_error()
            ));
        }
        // SAFETY: `fd` was just opened and is owned by nobody else.
        let file = unsafe { File::from_raw_fd(fd) };
        live()
            .lock()
            .expect("shm registry lock")
            .keys
            .push(key.to_string());
        let obj = ShmObject {
            key: key.to_string(),
            file,
            size,
        };
        obj.file.set_len(size).map_err(|e| {
            format!("cannot size the shared-memory object {key} to {size} bytes: {e}")
        })?;
        Ok(obj)
    }

    /// The region name: the key without its slash.
    fn name(&self) -> &str {
        self.key.trim_start_matches('/')
    }
}

fn unlink(key: &str) {
    if let Ok(c) = std::ffi::CString::new(key) {
        // SAFETY: a valid NUL-terminated string; unlinking a name that is
        // gone already only fails.
        unsafe {
            libc::shm_unlink(c.as_ptr());
        }
    }
}

impl Drop for ShmObject {
    fn drop(&mut self) {
        unlink(&self.key);
        live()
            .lock()
            .expect("shm registry lock")
            .keys
            .retain(|k| k != &self.key);
    }
}

/// What is registered or created by this process, for the signal path.
#[derive(Default)]
struct Live {
    keys: Vec<String>,
    /// Region names registered, and the servers they are registered with.
    regions: Vec<String>,
    servers: Vec<PerfClient>,
}

fn live() -> &'static Mutex<Live> {
    static LIVE: std::sync::OnceLock<Mutex<Live>> = std::sync::OnceLock::new();
    LIVE.get_or_init(|| Mutex::new(Live::default()))
}

/// On a signal: unregister this process's regions (at most about two
/// seconds in all) and unlink its shared-memory objects. Called from the
/// signal thread of `main.rs` before the process exits.
pub fn release_on_signal() {
    let (keys, regions, servers) = {
        let Ok(l) = live().lock() else { return };
        (l.keys.clone(), l.regions.clone(), l.servers.clone())
    };
    for k in &keys {
        unlink(k);
    }
    if regions.is_empty() || servers.is_empty() {
        return;
    }
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    rt.block_on(async {
        let all = async {
            for s in &servers {
                for r in &regions {
                    let _ = s.unregister_system_shm(r).await;
                }
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(2), all).await;
    });
}

/// The output buffers of one request in flight.
pub struct Slot {
    obj: ShmObject,
    /// The `outputs` of an HTTP request naming this slot's buffers.
    pub http_outputs: Value,
    /// The same as encoded gRPC `ModelInferRequest` fields (appended to
    /// the request message).
    pub grpc_outputs: Bytes,
}

/// The shared memory of one run.
pub struct Session {
    prefix: String,
    input: Option<ShmObject>,
    input_bytes: u64,
    /// Output names, and the bytes read of each after a response (the
    /// size from the config at the batch size sent, else the whole
    /// buffer).
    outputs: Vec<(String, u64)>,
    output_size: u64,
    servers: Vec<PerfClient>,
    free: Mutex<Vec<Arc<Slot>>>,
    /// Output slots made and registered.
    made: AtomicUsize,
    /// Names given to output objects (made or not): unique names.
    named: AtomicUsize,
    /// A slot could not be made during the load: no more attempts, so a
    /// refusing server does not cost an object and a round trip per
    /// request.
    failed: std::sync::atomic::AtomicBool,
    /// Serializes making new slots.
    making: tokio::sync::Mutex<()>,
    output_bytes: AtomicU64,
}

/// The report's `shared_memory` object.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ShmReport {
    /// "system".
    pub kind: String,
    /// Bytes of input tensors placed in shared memory (written once).
    pub input_bytes: u64,
    /// `--output-shared-memory-size`.
    pub output_size: u64,
    /// Output regions made (one per request in flight at the most).
    pub output_regions: u64,
    /// Bytes of outputs read from the output regions.
    pub output_bytes_read: u64,
}

/// A unique prefix for this run's names.
fn prefix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    static N: AtomicU64 = AtomicU64::new(0);
    let mut r = super::rng::Rng::new(nanos ^ N.fetch_add(1, Ordering::Relaxed).rotate_left(17));
    format!("tritonctl_{}_{:08x}", std::process::id(), r.below(1 << 32))
}

/// One input of a request body: its JSON object and its bytes.
type Chunk = (Map<String, Value>, Bytes);

/// The input tensors of `body` (binary, built with binary inputs): the
/// JSON of each input and its bytes.
fn input_chunks(body: &Body) -> Result<Vec<Chunk>, String> {
    let n = body
        .header_len
        .ok_or("shared memory needs binary input tensors")?;
    let mut tail = body.bytes.slice(n.min(body.bytes.len())..);
    let mut out = Vec::new();
    let empty = Vec::new();
    for t in body
        .header
        .get("inputs")
        .and_then(Value::as_array)
        .unwrap_or(&empty)
    {
        let size = t["parameters"]["binary_data_size"]
            .as_u64()
            .ok_or("an input without binary data")? as usize;
        if size > tail.len() {
            return Err("binary input data is cut short".into());
        }
        let bytes = tail.split_to(size);
        out.push((t.as_object().cloned().unwrap_or_default(), bytes));
    }
    Ok(out)
}

impl Session {
    /// Places the inputs of `bodies` (built with binary tensors) in one new
    /// region and returns the bodies that name them instead (JSON only,
    /// without `outputs`: each request adds its slot's). `outputs`: the
    /// model's outputs with the bytes of each at the batch size sent when
    /// the config tells.
    pub fn new(
        bodies: &[&Body],
        outputs: Vec<(String, Option<u64>)>,
        output_size: u64,
    ) -> Result<(Session, Vec<Body>), String> {
        let prefix = prefix();
        let mut placed = Vec::new();
        let mut end = 0u64;
        for b in bodies {
            let chunks = input_chunks(b)?;
            let mut at = Vec::new();
            for (t, bytes) in chunks {
                let off = end.div_ceil(ALIGN) * ALIGN;
                end = off + bytes.len() as u64;
                at.push((t, bytes, off));
            }
            placed.push(at);
        }
        let input_bytes = end;
        let input = if end > 0 {
            let obj = ShmObject::create(&format!("/{prefix}_input"), end)?;
            for at in &placed {
                for (_, bytes, off) in at {
                    obj.file
                        .write_all_at(bytes, *off)
                        .map_err(|e| format!("cannot write the input region {}: {e}", obj.key))?;
                }
            }
            Some(obj)
        } else {
            None
        };
        let region = input
            .as_ref()
            .map(|o| o.name().to_string())
            .unwrap_or_default();
        let mut out = Vec::new();
        for (b, at) in bodies.iter().zip(placed) {
            let mut header = b.header.clone();
            let inputs: Vec<Value> = at
                .into_iter()
                .map(|(mut t, bytes, off)| {
                    t.insert(
                        "parameters".into(),
                        json!({
                            "shared_memory_region": region,
                            "shared_memory_byte_size": bytes.len(),
                            "shared_memory_offset": off,
                        }),
                    );
                    Value::Object(t)
                })
                .collect();
            header.insert("inputs".into(), Value::Array(inputs));
            header.remove("outputs");
            if let Some(Value::Object(p)) = header.get_mut("parameters") {
                p.remove("binary_data_output");
                if p.is_empty() {
                    header.remove("parameters");
                }
            }
            let bytes = serde_json::to_vec(&header).expect("JSON serialises");
            out.push(Body {
                bytes: Bytes::from(bytes),
                header_len: None,
                header,
            });
        }
        let outputs = outputs
            .into_iter()
            .map(|(n, size)| (n, size.unwrap_or(output_size).min(output_size)))
            .collect();
        Ok((
            Session {
                prefix,
                input,
                input_bytes,
                outputs,
                output_size,
                servers: Vec::new(),
                free: Mutex::new(Vec::new()),
                made: AtomicUsize::new(0),
                named: AtomicUsize::new(0),
                failed: std::sync::atomic::AtomicBool::new(false),
                making: tokio::sync::Mutex::new(()),
                output_bytes: AtomicU64::new(0),
            },
            out,
        ))
    }

    /// Registers a region with every server (remembered for the cleanup).
    /// A region is remembered before it is registered, so that a signal
    /// or [`Session::close`] during or after a partial registration
    /// unregisters it; when a server refuses it, it is unregistered from
    /// every server again and forgotten.
    async fn register(&self, obj: &ShmObject) -> Result<(), String> {
        let name = obj.name().to_string();
        live()
            .lock()
            .expect("shm registry lock")
            .regions
            .push(name.clone());
        for s in &self.servers {
            if let Err(e) = s.register_system_shm(&name, &obj.key, obj.size).await {
                for s in &self.servers {
                    let _ = s.unregister_system_shm(&name).await;
                }
                live()
                    .lock()
                    .expect("shm registry lock")
                    .regions
                    .retain(|n| n != &name);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Registers the input region with `servers` and makes `slots` output
    /// slots. On failure, what was registered is released by
    /// [`Session::close`].
    pub async fn start(&mut self, servers: Vec<PerfClient>, slots: usize) -> Result<(), String> {
        self.servers = servers;
        live().lock().expect("shm registry lock").servers = self.servers.clone();
        if let Some(obj) = &self.input {
            self.register(obj).await?;
        }
        let mut made = Vec::new();
        for _ in 0..slots.max(1) {
            made.push(self.make_slot().await?);
        }
        self.free.lock().expect("slot lock").extend(made);
        Ok(())
    }

    async fn make_slot(&self) -> Result<Arc<Slot>, String> {
        let k = self.named.fetch_add(1, Ordering::Relaxed);
        let n = self.outputs.len().max(1) as u64;
        let size = n.checked_mul(self.output_size).ok_or_else(|| {
            format!(
                "{n} outputs of --output-shared-memory-size {} bytes do not fit in one region",
                self.output_size
            )
        })?;
        let obj = ShmObject::create(&format!("/{}_output{k}", self.prefix), size)?;
        let name = obj.name().to_string();
        let mut http = Vec::new();
        let mut grpc = super::grpc::pb::ModelInferRequest::default();
        for (i, (o, _)) in self.outputs.iter().enumerate() {
            let params = json!({
                "shared_memory_region": name,
                "shared_memory_byte_size": self.output_size,
                "shared_memory_offset": i as u64 * self.output_size,
            });
            grpc.outputs.push(
                super::grpc::pb::model_infer_request::InferRequestedOutputTensor {
                    name: o.clone(),
                    parameters: params
                        .as_object()
                        .into_iter()
                        .flatten()
                        .filter_map(|(k, v)| Some((k.clone(), super::grpc::parameter(v)?)))
                        .collect(),
                },
            );
            http.push(json!({"name": o, "parameters": params}));
        }
        self.register(&obj).await?;
        self.made.fetch_add(1, Ordering::Relaxed);
        use prost::Message;
        Ok(Arc::new(Slot {
            obj,
            http_outputs: Value::Array(http),
            grpc_outputs: Bytes::from(grpc.encode_to_vec()),
        }))
    }

    /// A free slot, or a new one (registered first).
    pub async fn take(&self) -> Result<Arc<Slot>, ErrorKind> {
        if let Some(s) = self.free.lock().expect("slot lock").pop() {
            return Ok(s);
        }
        if self.failed.load(Ordering::Relaxed) {
            return Err(ErrorKind::SharedMemory);
        }
        let _one = self.making.lock().await;
        if let Some(s) = self.free.lock().expect("slot lock").pop() {
            return Ok(s);
        }
        self.make_slot().await.map_err(|_| {
            self.failed.store(true, Ordering::Relaxed);
            ErrorKind::SharedMemory
        })
    }

    /// Reads the outputs of a finished request from its slot, and frees
    /// the slot. A request that timed out, lost its connection or was
    /// cancelled may still be running on the server, which would write
    /// its outputs into the slot later: that slot is not used again (it
    /// stays registered until [`Session::close`]).
    pub fn give_back(&self, slot: Arc<Slot>, r: &Result<super::client::ClientTime, ErrorKind>) {
        match r {
            Ok(_) => {
                // read in bounded chunks (the bytes are only counted), no
                // larger than the largest output
                let largest = self.outputs.iter().map(|(_, s)| *s).max().unwrap_or(0);
                let mut chunk = vec![0u8; largest.min(64 << 10) as usize];
                let mut read = 0u64;
                for (i, (_, size)) in self.outputs.iter().enumerate() {
                    let base = i as u64 * self.output_size;
                    let mut done = 0u64;
                    while done < *size {
                        let n = (*size - done).min(chunk.len() as u64) as usize;
                        if slot
                            .obj
                            .file
                            .read_exact_at(&mut chunk[..n], base + done)
                            .is_err()
                        {
                            break;
                        }
                        done += n as u64;
                    }
                    if done == *size {
                        read += size;
                    }
                }
                self.output_bytes.fetch_add(read, Ordering::Relaxed);
            }
            Err(ErrorKind::Timeout | ErrorKind::Connection | ErrorKind::Cancelled) => return,
            Err(_) => {}
        }
        self.free.lock().expect("slot lock").push(slot);
    }

    /// A slot for a request sent before the load (the probe).
    pub fn any_slot(&self) -> Option<Arc<Slot>> {
        self.free.lock().expect("slot lock").last().cloned()
    }

    /// What the report says.
    pub fn report(&self) -> ShmReport {
        ShmReport {
            kind: "system".into(),
            input_bytes: self.input_bytes,
            output_size: self.output_size,
            output_regions: self.made.load(Ordering::Relaxed) as u64,
            output_bytes_read: self.output_bytes.load(Ordering::Relaxed),
        }
    }

    /// Unregisters every region from every server and unlinks the memory
    /// objects; returns the first failure to unregister.
    /// A region is forgotten only once every server was asked to drop it:
    /// a signal during the close still finds the ones left.
    pub async fn close(&self) -> Result<(), String> {
        let names: Vec<String> = live().lock().expect("shm registry lock").regions.clone();
        let mut first = None;
        for n in &names {
            for s in &self.servers {
                if let Err(e) = s.unregister_system_shm(n).await {
                    first.get_or_insert(e);
                }
            }
            live()
                .lock()
                .expect("shm registry lock")
                .regions
                .retain(|r| r != n);
        }
        live().lock().expect("shm registry lock").servers.clear();
        // unlinked now: a slot still held somewhere unlinks again when it
        // drops, which is harmless
        let keys: Vec<String> = live()
            .lock()
            .expect("shm registry lock")
            .keys
            .iter()
            .filter(|k| k.starts_with(&format!("/{}_", self.prefix)))
            .cloned()
            .collect();
        for k in &keys {
            unlink(k);
        }
        first.map_or(Ok(()), Err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body() -> Body {
        let header = json!({"inputs": [
            {"name": "A", "datatype": "UINT8", "shape": [3], "parameters": {"binary_data_size": 3}},
            {"name": "B", "datatype": "UINT8", "shape": [2], "parameters": {"binary_data_size": 2}}],
            "parameters": {"binary_data_output": true}});
        let mut bytes = serde_json::to_vec(&header).unwrap();
        let n = bytes.len();
        bytes.extend_from_slice(&[1, 2, 3, 4, 5]);
        Body {
            bytes: Bytes::from(bytes),
            header_len: Some(n),
            header: header.as_object().unwrap().clone(),
        }
    }

    #[test]
    fn inputs_are_written_once_at_aligned_offsets() {
        let b = body();
        let (s, bodies) = Session::new(
            &[&b, &b],
            vec![("Y".into(), Some(8)), ("Z".into(), None)],
            100,
        )
        .unwrap();
        let obj = s.input.as_ref().unwrap();
        assert!(obj
            .key
            .starts_with(&format!("/tritonctl_{}_", std::process::id())));
        // A at 0, B at 64, then the second body's at 128 and 192
        assert_eq!(obj.size, 194);
        let mut got = [0u8; 2];
        obj.file.read_exact_at(&mut got, 192).unwrap();
        assert_eq!(got, [4, 5]);
        let v: Value = serde_json::from_slice(&bodies[1].bytes).unwrap();
        assert_eq!(v["inputs"][1]["parameters"]["shared_memory_offset"], 192);
        assert_eq!(v["inputs"][1]["parameters"]["shared_memory_byte_size"], 2);
        assert_eq!(
            v["inputs"][0]["parameters"]["shared_memory_region"],
            obj.name()
        );
        assert!(
            v.get("parameters").is_none() && v.get("outputs").is_none(),
            "{v}"
        );
        assert!(bodies[1].header_len.is_none());
        // outputs read: the config's size, else the whole buffer
        assert_eq!(s.outputs, vec![("Y".into(), 8), ("Z".into(), 100)]);
        #[cfg(target_os = "linux")]
        {
            let path = format!("/dev/shm{}", obj.key);
            assert!(std::path::Path::new(&path).exists());
            drop(s);
            assert!(!std::path::Path::new(&path).exists(), "{path} left behind");
        }
    }
}
