//! `perf --shared-memory system|cuda`: input and output tensors in memory
//! registered with the server instead of in the requests: POSIX shared
//! memory (Triton's system shared-memory extension) or GPU memory shared
//! through CUDA IPC handles (the CUDA shared-memory extension),
//! docs/spec/v2-protocol.md §7a. Both kinds are laid out alike:
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
//!   unregistered from every server, then its memory object unlinked or its
//!   device memory freed; on SIGINT, SIGTERM or SIGHUP `main.rs` calls
//!   [`release_on_signal`] (device memory goes with the process: the
//!   driver frees a process's allocations when it exits).
//!
//! The memory objects are made with `shm_open` (`libc`: the call Triton
//! itself makes with the key it is given, so both name the same object on
//! every POSIX system; on Linux it is a file under `/dev/shm`) and written
//! and read with `pwrite`/`pread` through the file descriptor: no memory
//! mapping on this side, so no `unsafe` beyond the two calls that name the
//! object. Only POSIX systems have it: elsewhere `system` is refused.
//!
//! GPU memory is one allocation per region (`cuMemAlloc`, filled with
//! `cuMemcpyHtoD`, read with `cuMemcpyDtoH`), registered with its 64-byte
//! IPC handle and the device number, through the [`Device`] trait.
//!
//! Names are `tritonctl_<pid>_<random>_...`, unique per run.

use super::client::{ErrorKind, PerfClient};
use super::device::{Buffer, Device};
use super::inputs::Body;
use bytes::Bytes;
use posix::{unlink, ShmObject};
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// perf_analyzer's default `--output-shared-memory-size`, bytes per output
/// (docs/spec/perf-anchors.md, shared memory).
pub const DEFAULT_OUTPUT_SIZE: u64 = 102_400;

/// Where tensors travel (`--shared-memory`).
#[derive(Debug, Clone)]
pub enum SharedMemory {
    None,
    System,
    /// GPU memory of this device.
    Cuda(Arc<dyn Device>),
}

impl SharedMemory {
    /// `none`, `system` or `cuda`, as the flag spells it.
    pub fn name(&self) -> &'static str {
        match self {
            SharedMemory::None => "none",
            SharedMemory::System => "system",
            SharedMemory::Cuda(_) => "cuda",
        }
    }
}

/// The extension a region is registered with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    System,
    Cuda,
}

/// The message where `--shared-memory system` cannot work.
pub const NEEDS_POSIX: &str =
    "--shared-memory system needs a POSIX system (shm_open); use --shared-memory none or cuda";

/// Tensors start at multiples of this in the input region.
const ALIGN: u64 = 64;

/// POSIX shared-memory objects (`shm_open`).
#[cfg(unix)]
mod posix {
    use std::fs::File;
    use std::os::unix::fs::FileExt;

    /// One POSIX shared-memory object made by this run; unlinked when dropped.
    #[derive(Debug)]
    pub(super) struct ShmObject {
        /// `/tritonctl_...`: the name given to `shm_open` (Triton's `key`).
        pub(super) key: String,
        file: File,
    }

    impl ShmObject {
        pub(super) fn create(key: &str, size: u64) -> Result<Self, String> {
            use std::os::fd::FromRawFd;
            let c = std::ffi::CString::new(key).map_err(|_| format!("bad key {key}"))?;
            // Signals are caught before the object exists (src/interrupt.rs).
            crate::interrupt::arm();
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
            super::live()
                .lock()
                .expect("shm registry lock")
                .keys
                .push(key.to_string());
            let obj = ShmObject {
                key: key.to_string(),
                file,
            };
            obj.file.set_len(size).map_err(|e| {
                format!("cannot size the shared-memory object {key} to {size} bytes: {e}")
            })?;
            Ok(obj)
        }

        pub(super) fn write_at(&self, bytes: &[u8], off: u64) -> std::io::Result<()> {
            self.file.write_all_at(bytes, off)
        }

        pub(super) fn read_at(&self, buf: &mut [u8], off: u64) -> std::io::Result<()> {
            self.file.read_exact_at(buf, off)
        }
    }

    pub(super) fn unlink(key: &str) {
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
            super::live()
                .lock()
                .expect("shm registry lock")
                .keys
                .retain(|k| k != &self.key);
        }
    }
}

/// No POSIX shared memory here: `system` is refused before the run
/// (`NEEDS_POSIX`); these only keep the types whole.
#[cfg(not(unix))]
mod posix {
    #[derive(Debug)]
    pub(super) struct ShmObject {
        pub(super) key: String,
    }

    impl ShmObject {
        pub(super) fn create(_key: &str, _size: u64) -> Result<Self, String> {
            Err(super::NEEDS_POSIX.into())
        }
        pub(super) fn write_at(&self, _bytes: &[u8], _off: u64) -> std::io::Result<()> {
            Err(std::io::ErrorKind::Unsupported.into())
        }
        pub(super) fn read_at(&self, _buf: &mut [u8], _off: u64) -> std::io::Result<()> {
            Err(std::io::ErrorKind::Unsupported.into())
        }
    }

    pub(super) fn unlink(_key: &str) {}
}

/// The memory of one region.
enum Memory {
    System(ShmObject),
    Cuda(Box<dyn Buffer>),
}

/// One region made by this run: its name (Triton's region name) and
/// memory.
struct Region {
    name: String,
    size: u64,
    mem: Memory,
}

impl Region {
    /// `name` (unique per run) of `size` bytes, of the kind of `place`.
    fn create(place: &SharedMemory, name: String, size: u64) -> Result<Region, String> {
        let mem = match place {
            SharedMemory::Cuda(dev) => Memory::Cuda(dev.alloc(size)?),
            _ => Memory::System(ShmObject::create(&format!("/{name}"), size)?),
        };
        Ok(Region { name, size, mem })
    }

    fn kind(&self) -> Kind {
        match self.mem {
            Memory::System(_) => Kind::System,
            Memory::Cuda(_) => Kind::Cuda,
        }
    }

    fn write_at(&self, bytes: &[u8], off: u64) -> Result<(), String> {
        match &self.mem {
            Memory::System(o) => o.write_at(bytes, off).map_err(|e| e.to_string()),
            Memory::Cuda(b) => b.write(off, bytes),
        }
        .map_err(|e| format!("cannot write the input region {}: {e}", self.name))
    }

    fn read_at(&self, buf: &mut [u8], off: u64) -> Result<(), String> {
        match &self.mem {
            Memory::System(o) => o.read_at(buf, off).map_err(|e| e.to_string()),
            Memory::Cuda(b) => b.read(off, buf),
        }
    }
}

/// Unregisters region `name` from `server`.
async fn unregister(server: &PerfClient, kind: Kind, name: &str) -> Result<(), String> {
    match kind {
        Kind::System => server.unregister_system_shm(name).await,
        Kind::Cuda => server.unregister_cuda_shm(name).await,
    }
}

/// What is registered or created by this process, for the signal path.
#[derive(Default)]
struct Live {
    keys: Vec<String>,
    /// Region names registered (with their extension), and the servers
    /// they are registered with.
    regions: Vec<(String, Kind)>,
    servers: Vec<PerfClient>,
}

fn live() -> &'static Mutex<Live> {
    static LIVE: std::sync::OnceLock<Mutex<Live>> = std::sync::OnceLock::new();
    LIVE.get_or_init(|| {
        // Signals are caught before anything is recorded (src/interrupt.rs).
        crate::interrupt::arm();
        Mutex::new(Live::default())
    })
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
                for (r, kind) in &regions {
                    let _ = unregister(s, *kind, r).await;
                }
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(2), all).await;
    });
}

/// The output buffers of one request in flight.
pub struct Slot {
    obj: Region,
    /// The `outputs` of an HTTP request naming this slot's buffers.
    pub http_outputs: Value,
    /// The same as encoded gRPC `ModelInferRequest` fields (appended to
    /// the request message).
    pub grpc_outputs: Bytes,
}

/// The shared memory of one run.
pub struct Session {
    prefix: String,
    /// System or CUDA (never `None`).
    place: SharedMemory,
    input: Option<Region>,
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
    /// "system" or "cuda".
    pub kind: String,
    /// With "cuda": the GPU the regions are on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_id: Option<i64>,
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
        place: &SharedMemory,
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
            let obj = Region::create(place, format!("{prefix}_input"), end)?;
            for at in &placed {
                for (_, bytes, off) in at {
                    obj.write_at(bytes, *off)?;
                }
            }
            Some(obj)
        } else {
            None
        };
        let region = input.as_ref().map(|o| o.name.clone()).unwrap_or_default();
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
                place: place.clone(),
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
    async fn register(&self, obj: &Region) -> Result<(), String> {
        let name = obj.name.clone();
        let kind = obj.kind();
        let handle =
            match &obj.mem {
                Memory::Cuda(b) => Some(b.ipc_handle().map_err(|e| {
                    format!("cannot get the CUDA IPC handle of region '{name}': {e}")
                })?),
                Memory::System(_) => None,
            };
        live()
            .lock()
            .expect("shm registry lock")
            .regions
            .push((name.clone(), kind));
        for s in &self.servers {
            let registered = match (&obj.mem, &handle, &self.place) {
                (Memory::System(o), _, _) => s.register_system_shm(&name, &o.key, obj.size).await,
                (Memory::Cuda(_), Some(h), SharedMemory::Cuda(dev)) => {
                    s.register_cuda_shm(&name, h, dev.id(), obj.size).await
                }
                _ => Err(format!("region '{name}' has no CUDA IPC handle")),
            };
            if let Err(e) = registered {
                for s in &self.servers {
                    let _ = unregister(s, kind, &name).await;
                }
                live()
                    .lock()
                    .expect("shm registry lock")
                    .regions
                    .retain(|(n, _)| n != &name);
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
        live()
            .lock()
            .expect("shm registry lock")
            .servers
            .extend(self.servers.iter().cloned());
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
        let obj = Region::create(&self.place, format!("{}_output{k}", self.prefix), size)?;
        let name = obj.name.clone();
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
                        if slot.obj.read_at(&mut chunk[..n], base + done).is_err() {
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
            kind: self.place.name().into(),
            device_id: match &self.place {
                SharedMemory::Cuda(dev) => Some(dev.id()),
                _ => None,
            },
            input_bytes: self.input_bytes,
            output_size: self.output_size,
            output_regions: self.made.load(Ordering::Relaxed) as u64,
            output_bytes_read: self.output_bytes.load(Ordering::Relaxed),
        }
    }

    /// Unregisters every region from every server and unlinks the memory
    /// objects (device memory is freed when the session drops, after
    /// this); returns the first failure to unregister.
    /// A region is forgotten only once every server was asked to drop it:
    /// a signal during the close still finds the ones left.
    pub async fn close(&self) -> Result<(), String> {
        // this session's regions only: a process may run more than one
        // (the library's tests do)
        let mine = format!("{}_", self.prefix);
        let names: Vec<(String, Kind)> = live()
            .lock()
            .expect("shm registry lock")
            .regions
            .iter()
            .filter(|(n, _)| n.starts_with(&mine))
            .cloned()
            .collect();
        let mut first = None;
        for (n, kind) in &names {
            for s in &self.servers {
                if let Err(e) = unregister(s, *kind, n).await {
                    first.get_or_insert(e);
                }
            }
            live()
                .lock()
                .expect("shm registry lock")
                .regions
                .retain(|(r, _)| r != n);
        }
        {
            // the servers stay known to the signal path while another
            // session has regions
            let mut l = live().lock().expect("shm registry lock");
            if l.regions.is_empty() {
                l.servers.clear();
            }
        }
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

    #[cfg(unix)]
    #[test]
    fn inputs_are_written_once_at_aligned_offsets() {
        let b = body();
        let (s, bodies) = Session::new(
            &SharedMemory::System,
            &[&b, &b],
            vec![("Y".into(), Some(8)), ("Z".into(), None)],
            100,
        )
        .unwrap();
        let region = s.input.as_ref().unwrap();
        let Memory::System(obj) = &region.mem else {
            panic!("not a system region")
        };
        assert!(obj
            .key
            .starts_with(&format!("/tritonctl_{}_", std::process::id())));
        assert_eq!(obj.key, format!("/{}", region.name));
        // A at 0, B at 64, then the second body's at 128 and 192
        assert_eq!(region.size, 194);
        let mut got = [0u8; 2];
        region.read_at(&mut got, 192).unwrap();
        assert_eq!(got, [4, 5]);
        let v: Value = serde_json::from_slice(&bodies[1].bytes).unwrap();
        assert_eq!(v["inputs"][1]["parameters"]["shared_memory_offset"], 192);
        assert_eq!(v["inputs"][1]["parameters"]["shared_memory_byte_size"], 2);
        assert_eq!(
            v["inputs"][0]["parameters"]["shared_memory_region"],
            region.name
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

    #[test]
    fn cuda_inputs_go_to_device_memory_freed_with_the_session() {
        use crate::perf::device::fake::{open_handle, FakeDevice};
        let b = body();
        let dev = FakeDevice::new(3);
        let place = SharedMemory::Cuda(dev.clone());
        let (s, bodies) =
            Session::new(&place, &[&b, &b], vec![("Y".into(), Some(8))], 100).unwrap();
        let region = s.input.as_ref().unwrap();
        let Memory::Cuda(buf) = &region.mem else {
            panic!("not a CUDA region")
        };
        assert_eq!(buf.size(), 194);
        // what the server sees through the handle: the same layout as a
        // system region (A at 0, B at 64, then 128 and 192)
        let mem = open_handle(&buf.ipc_handle().unwrap()).expect("handle opens");
        {
            let m = mem.lock().unwrap();
            assert_eq!(&m[..3], &[1, 2, 3]);
            assert_eq!(&m[64..66], &[4, 5]);
            assert_eq!(&m[192..194], &[4, 5]);
        }
        let v: Value = serde_json::from_slice(&bodies[1].bytes).unwrap();
        assert_eq!(v["inputs"][1]["parameters"]["shared_memory_offset"], 192);
        assert_eq!(
            v["inputs"][0]["parameters"]["shared_memory_region"],
            region.name
        );
        assert_eq!(s.report().kind, "cuda");
        assert_eq!(s.report().device_id, Some(3));
        let handle = buf.ipc_handle().unwrap();
        assert_eq!(dev.allocated.load(Ordering::SeqCst), 1);
        drop(s);
        assert_eq!(dev.freed.load(Ordering::SeqCst), 1);
        assert!(open_handle(&handle).is_none(), "freed memory still open");
    }
}
