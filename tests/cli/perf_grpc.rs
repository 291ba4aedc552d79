//! `tritonctl perf -i grpc` against a small in-process gRPC server on the
//! loopback interface (tonic, with the service types the crate generates
//! from its own proto). The server checks every inference request it gets
//! (raw tensors, shapes and sizes, sequence parameters as Triton accepts
//! them, the order of the steps of each sequence) and records what is
//! wrong, so a run without errors shows the wire format is right; it can
//! also fail or stall chosen requests, to check how perf counts them.
//! Model "dec" is decoupled: it streams a known number of responses with
//! known delays on `ModelStreamInfer`, then an empty final response (or
//! puts the final flag on its last response), and can stop, fail or never
//! end chosen requests.

use crate::common::{send_signal, tritonctl};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_stream::StreamExt;
use tonic::{Request, Response, Status};
use tritonctl::perf::grpc::pb;
use tritonctl::perf::grpc::pb::grpc_inference_service_server::{
    GrpcInferenceService, GrpcInferenceServiceServer,
};
use tritonctl::perf::grpc::pb::infer_parameter::ParameterChoice;
use tritonctl::schema::inference as cfg;

/// What the server does.
#[derive(Clone, Default)]
pub(crate) struct Behaviour {
    /// By request number modulo 10: these fail with INTERNAL (a stream
    /// reply with an error message on streams).
    fail: Vec<u64>,
    /// The request with this number (from 1) takes this long.
    stall: Option<(u64, Duration)>,
    /// How model "dec" streams.
    dec: Dec,
}

/// Model "dec": `n` responses per request, the first `first` after the
/// request came, then one every `gap`.
#[derive(Clone)]
struct Dec {
    n: u64,
    first: Duration,
    gap: Duration,
    /// The final flag on the last response instead of an empty final
    /// response after it.
    final_with_output: bool,
    /// By request number (from 1) modulo 10: these requests go wrong.
    faults: Vec<(u64, Fault)>,
}

impl Default for Dec {
    fn default() -> Self {
        Dec {
            n: 4,
            first: Duration::from_millis(30),
            gap: Duration::from_millis(10),
            final_with_output: false,
            faults: Vec::new(),
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Fault {
    /// The server ends the stream after this many responses.
    Stop(u64),
    /// An error reply after this many responses.
    Error(u64),
    /// Responses forever, never a final one.
    Endless,
    /// After this many responses, a reply whose final flag is a number.
    Malformed(u64),
}

#[derive(Default)]
struct State {
    unary: AtomicU64,
    streamed: AtomicU64,
    streams_opened: AtomicU64,
    streams_open: AtomicUsize,
    max_streams_open: AtomicUsize,
    bad: Mutex<Vec<String>>,
    /// Sequence id -> (live, a step in flight, steps so far).
    sequences: Mutex<BTreeMap<i64, (bool, bool, u64)>>,
    ended: AtomicU64,
    /// Successful requests (for the statistics).
    ok: AtomicU64,
    /// The models whose config was asked for, in order.
    configs: Mutex<Vec<String>>,
    /// When the server saw a client cancel a decoupled request it was
    /// still streaming (the stream reset).
    cancelled: Mutex<Vec<Instant>>,
    /// Responses with outputs sent by model "dec".
    dec_responses: AtomicU64,
    /// System shared-memory regions: name -> (key, byte size); every key
    /// registered; requests whose input came from a region and whose
    /// output went to one; requests with raw tensor bytes.
    regions: Mutex<BTreeMap<String, (String, u64)>>,
    shm_keys: Mutex<Vec<String>>,
    shm_inputs: AtomicU64,
    shm_outputs: AtomicU64,
    raw_requests: AtomicU64,
    /// CUDA registrations (name, handle bytes, device id, byte size) and
    /// the regions unregistered, in order.
    cuda_registrations: Mutex<Vec<CudaRegistration>>,
    cuda_unregistered: Mutex<Vec<String>>,
    /// The values of X of each request, in order.
    x_values: Mutex<Vec<Vec<f32>>>,
}

/// A `CudaSharedMemoryRegister`: name, handle bytes, device id, byte size.
type CudaRegistration = (String, Vec<u8>, i64, u64);

/// An `int64_param`, as Triton requires for the shared-memory sizes.
fn int_param(p: &std::collections::HashMap<String, pb::InferParameter>, k: &str) -> Option<i64> {
    match p.get(k).and_then(param) {
        Some(ParameterChoice::Int64Param(v)) => Some(*v),
        _ => None,
    }
}

/// The memory object of a registered region.
fn region_file(s: &State, name: &str) -> Result<(crate::common::ShmRegion, u64), String> {
    crate::common::shm_region_file(&s.regions, name)
}

#[derive(Clone)]
struct Svc {
    b: Behaviour,
    s: Arc<State>,
}

fn x_input(shape: Vec<i64>) -> pb::model_metadata_response::TensorMetadata {
    pb::model_metadata_response::TensorMetadata {
        name: "X".into(),
        datatype: "FP32".into(),
        shape,
    }
}

/// Elements of X per batch element: 4, 200000 (800 kB) for model "big",
/// 10^12 (4 TB, a hostile server's dims) for model "huge".
fn width(model: &str) -> i64 {
    match model {
        "big" => 200_000,
        "huge" => 1_000_000_000_000,
        _ => 4,
    }
}

fn known(model: &str) -> bool {
    matches!(model, "m" | "seq" | "big" | "huge" | "ens" | "dec")
}

/// Models whose requests are sequence steps: "seq" and the ensemble
/// "ens" (steps "m" then "seq", version 1 pinned).
fn stateful(model: &str) -> bool {
    matches!(model, "seq" | "ens")
}

fn param(p: &pb::InferParameter) -> Option<&ParameterChoice> {
    p.parameter_choice.as_ref()
}

impl Svc {
    fn bad(&self, what: String) -> Status {
        self.s.bad.lock().unwrap().push(what.clone());
        Status::invalid_argument(what)
    }

    /// Checks a request as Triton would (and more), then answers it.
    async fn handle(
        &self,
        r: pb::ModelInferRequest,
        n: u64,
    ) -> Result<pb::ModelInferResponse, Status> {
        if let Some((k, d)) = self.b.stall {
            if n == k {
                tokio::time::sleep(d).await;
            }
        }
        if self.b.fail.contains(&(n % 10)) {
            return Err(Status::internal("injected failure"));
        }
        if !known(&r.model_name) {
            return Err(Status::not_found(format!("no model {}", r.model_name)));
        }
        let mut r = r;
        // an input in shared memory: read from its region, then checked as
        // raw bytes would be
        let region = match r
            .inputs
            .first()
            .and_then(|x| x.parameters.get("shared_memory_region"))
        {
            Some(p) => match param(p) {
                Some(ParameterChoice::StringParam(n)) => Some(n.clone()),
                other => return Err(self.bad(format!("shared_memory_region {other:?}"))),
            },
            None => None,
        };
        if let Some(name) = &region {
            let p = &r.inputs[0].parameters;
            let (Some(size), off) = (
                int_param(p, "shared_memory_byte_size"),
                int_param(p, "shared_memory_offset").unwrap_or(0),
            ) else {
                return Err(self.bad("shared_memory_byte_size is not an int64_param".into()));
            };
            if !r.raw_input_contents.is_empty() {
                return Err(self.bad("raw tensor data besides shared memory".into()));
            }
            let read = region_file(&self.s, name).and_then(|(f, total)| {
                if (off + size) as u64 > total {
                    return Err(format!("{off} + {size} beyond region '{name}'"));
                }
                let mut buf = vec![0; size as usize];
                f.read_exact_at(&mut buf, off as u64)
                    .map_err(|e| e.to_string())?;
                Ok(buf)
            });
            match read {
                Ok(b) => r.raw_input_contents.push(b.into()),
                Err(e) => return Err(self.bad(e)),
            }
            self.s.shm_inputs.fetch_add(1, Ordering::SeqCst);
        } else {
            self.s.raw_requests.fetch_add(1, Ordering::SeqCst);
        }
        if r.inputs.len() != 1 || r.raw_input_contents.len() != 1 {
            return Err(self.bad(format!(
                "{} inputs, {} raw buffers",
                r.inputs.len(),
                r.raw_input_contents.len()
            )));
        }
        let x = &r.inputs[0];
        let elems: i64 = x.shape.iter().product();
        if x.name != "X"
            || x.datatype != "FP32"
            || x.shape.len() != 2
            || x.shape[1] != width(&r.model_name)
            || x.contents.is_some()
            || r.raw_input_contents[0].len() as i64 != elems * 4
        {
            return Err(self.bad(format!(
                "input {} {} {:?} with {} raw bytes",
                x.name,
                x.datatype,
                x.shape,
                r.raw_input_contents[0].len()
            )));
        }
        if r.parameters.contains_key("binary_data_output") {
            return Err(self.bad("HTTP-only parameter binary_data_output".into()));
        }
        let seq_id = if stateful(&r.model_name) {
            Some(self.sequence_step(&r)?)
        } else {
            None
        };
        // the work itself
        tokio::time::sleep(Duration::from_micros(200)).await;
        if let Some(id) = seq_id {
            let mut seqs = self.s.sequences.lock().unwrap();
            if let Some(e) = seqs.get_mut(&id) {
                e.1 = false;
            }
        }
        self.s.x_values.lock().unwrap().push(
            r.raw_input_contents[0]
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
                .collect(),
        );
        let out_region = r.outputs.first().and_then(|o| {
            match o.parameters.get("shared_memory_region").and_then(param) {
                Some(ParameterChoice::StringParam(n)) => Some((n.clone(), o.parameters.clone())),
                _ => None,
            }
        });
        if let Some((name, p)) = out_region {
            // the output (the input echoed) written to its region
            let y = r.raw_input_contents[0].clone();
            let size = int_param(&p, "shared_memory_byte_size").unwrap_or(0);
            let off = int_param(&p, "shared_memory_offset").unwrap_or(0);
            if (y.len() as i64) > size {
                return Err(Status::invalid_argument(format!(
                    "shared memory size specified with the request for output 'Y' ({size} bytes) should be at least {} bytes to hold the results",
                    y.len()
                )));
            }
            let written = region_file(&self.s, &name)
                .and_then(|(f, _)| f.write_all_at(&y, off as u64).map_err(|e| e.to_string()));
            if let Err(e) = written {
                return Err(self.bad(e));
            }
            self.s.shm_outputs.fetch_add(1, Ordering::SeqCst);
            self.s.ok.fetch_add(1, Ordering::Relaxed);
            return Ok(pb::ModelInferResponse {
                model_name: r.model_name.clone(),
                id: r.id.clone(),
                outputs: vec![pb::model_infer_response::InferOutputTensor {
                    name: "Y".into(),
                    datatype: "FP32".into(),
                    shape: x.shape.clone(),
                    ..Default::default()
                }],
                ..Default::default()
            });
        }
        self.s.ok.fetch_add(1, Ordering::Relaxed);
        Ok(pb::ModelInferResponse {
            model_name: r.model_name.clone(),
            id: r.id.clone(),
            outputs: vec![pb::model_infer_response::InferOutputTensor {
                name: "Y".into(),
                datatype: "FP32".into(),
                shape: x.shape.clone(),
                ..Default::default()
            }],
            raw_output_contents: vec![r.raw_input_contents[0].clone()],
            ..Default::default()
        })
    }

    /// The sequence rules: an id as `int64_param`, both flags as
    /// `bool_param`, START only for a new id, no step for an unknown one,
    /// one step in flight per sequence.
    fn sequence_step(&self, r: &pb::ModelInferRequest) -> Result<i64, Status> {
        let id = match r.parameters.get("sequence_id").and_then(param) {
            Some(ParameterChoice::Int64Param(v)) if *v > 0 => *v,
            other => return Err(self.bad(format!("sequence_id {other:?}"))),
        };
        let flag = |k: &str| match r.parameters.get(k).and_then(param) {
            Some(ParameterChoice::BoolParam(b)) => Ok(*b),
            other => Err(format!("{k} {other:?}")),
        };
        let (start, end) = match (flag("sequence_start"), flag("sequence_end")) {
            (Ok(s), Ok(e)) => (s, e),
            (Err(e), _) | (_, Err(e)) => return Err(self.bad(e)),
        };
        let mut seqs = self.s.sequences.lock().unwrap();
        let e = seqs.entry(id).or_insert((false, false, 0));
        if start && e.0 {
            drop(seqs);
            return Err(self.bad(format!("START for live sequence {id}")));
        }
        if !start && !e.0 {
            drop(seqs);
            return Err(self.bad(format!("step without START for sequence {id}")));
        }
        if e.1 {
            drop(seqs);
            return Err(self.bad(format!("two steps of sequence {id} in flight")));
        }
        if start {
            *e = (true, false, 0);
        }
        e.1 = true;
        e.2 += 1;
        if end {
            e.0 = false;
            self.s.ended.fetch_add(1, Ordering::Relaxed);
        }
        Ok(id)
    }
}

type StreamTx = tokio::sync::mpsc::UnboundedSender<Result<pb::ModelStreamInferResponse, Status>>;

impl Svc {
    /// Streams the responses of one request to model "dec"; false when
    /// the stream is to end (a fault, or the client is gone).
    async fn decoupled(&self, r: pb::ModelInferRequest, n: u64, tx: &StreamTx) -> bool {
        match r
            .parameters
            .get("triton_enable_empty_final_response")
            .and_then(param)
        {
            Some(ParameterChoice::BoolParam(true)) => {}
            other => {
                self.bad(format!("triton_enable_empty_final_response {other:?}"));
            }
        }
        if r.inputs.len() != 1
            || r.raw_input_contents.len() != 1
            || r.raw_input_contents[0].len() as i64 != r.inputs[0].shape.iter().product::<i64>() * 4
        {
            self.bad(format!("decoupled request {:?}", r.inputs));
        }
        let d = &self.b.dec;
        let fault = d.faults.iter().find(|(k, _)| n % 10 == *k).map(|(_, f)| *f);
        let reply = |output: bool, last: bool| {
            let mut resp = pb::ModelInferResponse {
                model_name: r.model_name.clone(),
                id: r.id.clone(),
                ..Default::default()
            };
            if output {
                resp.outputs
                    .push(pb::model_infer_response::InferOutputTensor {
                        name: "Y".into(),
                        datatype: "FP32".into(),
                        shape: r.inputs[0].shape.clone(),
                        ..Default::default()
                    });
                resp.raw_output_contents = r.raw_input_contents.clone();
            }
            resp.parameters.insert(
                "triton_final_response".into(),
                pb::InferParameter {
                    parameter_choice: Some(ParameterChoice::BoolParam(last)),
                },
            );
            Ok(pb::ModelStreamInferResponse {
                error_message: String::new(),
                infer_response: Some(resp),
            })
        };
        let mut sent = 0;
        loop {
            tokio::time::sleep(if sent == 0 { d.first } else { d.gap }).await;
            match fault {
                Some(Fault::Stop(k)) if sent == k => return false,
                Some(Fault::Malformed(k)) if sent == k => {
                    let mut bad = reply(true, false);
                    if let Ok(m) = &mut bad {
                        let resp = m.infer_response.as_mut().unwrap();
                        resp.parameters.insert(
                            "triton_final_response".into(),
                            pb::InferParameter {
                                parameter_choice: Some(ParameterChoice::Int64Param(1)),
                            },
                        );
                    }
                    let _ = tx.send(bad);
                    return true;
                }
                Some(Fault::Error(k)) if sent == k => {
                    let _ = tx.send(Ok(pb::ModelStreamInferResponse {
                        error_message: "injected failure".into(),
                        infer_response: Some(pb::ModelInferResponse {
                            model_name: r.model_name.clone(),
                            id: r.id.clone(),
                            ..Default::default()
                        }),
                    }));
                    return true;
                }
                _ => {}
            }
            let last = !matches!(fault, Some(Fault::Endless)) && sent + 1 == d.n;
            if tx.send(reply(true, last && d.final_with_output)).is_err() {
                self.s.cancelled.lock().unwrap().push(Instant::now());
                return false;
            }
            self.s.dec_responses.fetch_add(1, Ordering::SeqCst);
            sent += 1;
            if last {
                if !d.final_with_output && tx.send(reply(false, true)).is_err() {
                    return false;
                }
                self.s.ok.fetch_add(1, Ordering::Relaxed);
                return true;
            }
        }
    }
}

#[tonic::async_trait]
impl GrpcInferenceService for Svc {
    async fn server_live(
        &self,
        _: Request<pb::ServerLiveRequest>,
    ) -> Result<Response<pb::ServerLiveResponse>, Status> {
        Ok(Response::new(pb::ServerLiveResponse { live: true }))
    }

    async fn server_ready(
        &self,
        _: Request<pb::ServerReadyRequest>,
    ) -> Result<Response<pb::ServerReadyResponse>, Status> {
        Ok(Response::new(pb::ServerReadyResponse { ready: true }))
    }

    async fn model_ready(
        &self,
        _: Request<pb::ModelReadyRequest>,
    ) -> Result<Response<pb::ModelReadyResponse>, Status> {
        Ok(Response::new(pb::ModelReadyResponse { ready: true }))
    }

    async fn model_metadata(
        &self,
        r: Request<pb::ModelMetadataRequest>,
    ) -> Result<Response<pb::ModelMetadataResponse>, Status> {
        let name = r.into_inner().name;
        if !known(&name) {
            return Err(Status::not_found(format!(
                "Request for unknown model: '{name}' is not found"
            )));
        }
        let w = width(&name);
        Ok(Response::new(pb::ModelMetadataResponse {
            name,
            versions: vec!["1".into()],
            platform: "python".into(),
            inputs: vec![x_input(vec![-1, w])],
            outputs: vec![pb::model_metadata_response::TensorMetadata {
                name: "Y".into(),
                ..x_input(vec![-1, w])
            }],
        }))
    }

    async fn model_config(
        &self,
        r: Request<pb::ModelConfigRequest>,
    ) -> Result<Response<pb::ModelConfigResponse>, Status> {
        let name = r.into_inner().name;
        let config = cfg::ModelConfig {
            name: name.clone(),
            max_batch_size: 8,
            input: vec![cfg::ModelInput {
                name: "X".into(),
                data_type: cfg::DataType::TypeFp32 as i32,
                dims: vec![width(&name)],
                ..Default::default()
            }],
            scheduling_choice: match name.as_str() {
                "seq" => Some(cfg::model_config::SchedulingChoice::SequenceBatching(
                    cfg::ModelSequenceBatching::default(),
                )),
                "ens" => Some(cfg::model_config::SchedulingChoice::EnsembleScheduling(
                    cfg::ModelEnsembling {
                        step: [("m", -1), ("seq", 1)]
                            .into_iter()
                            .map(|(m, v)| cfg::model_ensembling::Step {
                                model_name: m.into(),
                                model_version: v,
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    },
                )),
                _ => None,
            },
            model_transaction_policy: (name == "dec")
                .then_some(cfg::ModelTransactionPolicy { decoupled: true }),
            platform: if name == "ens" { "ensemble" } else { "" }.into(),
            backend: if name == "ens" { "" } else { "python" }.into(),
            ..Default::default()
        };
        {
            let mut asked = self.s.configs.lock().unwrap();
            asked.push(name.clone());
        }
        Ok(Response::new(pb::ModelConfigResponse {
            config: Some(config),
        }))
    }

    async fn model_statistics(
        &self,
        r: Request<pb::ModelStatisticsRequest>,
    ) -> Result<Response<pb::ModelStatisticsResponse>, Status> {
        let n = self.s.ok.load(Ordering::Relaxed);
        let d = |per: u64| pb::StatisticDuration {
            count: n,
            ns: n * per,
        };
        Ok(Response::new(pb::ModelStatisticsResponse {
            model_stats: vec![pb::ModelStatistics {
                name: r.into_inner().name,
                version: "1".into(),
                inference_count: n,
                execution_count: n,
                inference_stats: Some(pb::InferStatistics {
                    success: Some(d(10_000)),
                    queue: Some(d(2_000)),
                    compute_input: Some(d(1_000)),
                    compute_infer: Some(d(5_000)),
                    compute_output: Some(d(1_000)),
                    ..Default::default()
                }),
                ..Default::default()
            }],
        }))
    }

    async fn model_infer(
        &self,
        r: Request<pb::ModelInferRequest>,
    ) -> Result<Response<pb::ModelInferResponse>, Status> {
        let n = self.s.unary.fetch_add(1, Ordering::SeqCst) + 1;
        let r = r.into_inner();
        if r.model_name == "dec" {
            return Err(self.bad("a unary request to a decoupled model".into()));
        }
        self.handle(r, n).await.map(Response::new)
    }

    async fn system_shared_memory_status(
        &self,
        _: Request<pb::SystemSharedMemoryStatusRequest>,
    ) -> Result<Response<pb::SystemSharedMemoryStatusResponse>, Status> {
        let regions = self
            .s
            .regions
            .lock()
            .unwrap()
            .iter()
            .map(|(n, (k, b))| {
                let status = pb::system_shared_memory_status_response::RegionStatus {
                    name: n.clone(),
                    key: k.clone(),
                    offset: 0,
                    byte_size: *b,
                };
                (n.clone(), status)
            })
            .collect();
        Ok(Response::new(pb::SystemSharedMemoryStatusResponse {
            regions,
        }))
    }

    async fn system_shared_memory_register(
        &self,
        r: Request<pb::SystemSharedMemoryRegisterRequest>,
    ) -> Result<Response<pb::SystemSharedMemoryRegisterResponse>, Status> {
        let r = r.into_inner();
        let on_disk = std::fs::metadata(format!("/dev/shm{}", r.key)).map(|m| m.len());
        if r.offset != 0 || on_disk.map_or(true, |n| n < r.byte_size) {
            return Err(Status::invalid_argument(format!(
                "Unable to open shared memory region: '{}'",
                r.key
            )));
        }
        let mut regions = self.s.regions.lock().unwrap();
        if regions.contains_key(&r.name) {
            return Err(Status::already_exists(format!(
                "shared memory region '{}' already in manager",
                r.name
            )));
        }
        regions.insert(r.name, (r.key.clone(), r.byte_size));
        self.s.shm_keys.lock().unwrap().push(r.key);
        Ok(Response::new(pb::SystemSharedMemoryRegisterResponse {}))
    }

    async fn system_shared_memory_unregister(
        &self,
        r: Request<pb::SystemSharedMemoryUnregisterRequest>,
    ) -> Result<Response<pb::SystemSharedMemoryUnregisterResponse>, Status> {
        self.s.regions.lock().unwrap().remove(&r.into_inner().name);
        Ok(Response::new(pb::SystemSharedMemoryUnregisterResponse {}))
    }

    async fn cuda_shared_memory_register(
        &self,
        r: Request<pb::CudaSharedMemoryRegisterRequest>,
    ) -> Result<Response<pb::CudaSharedMemoryRegisterResponse>, Status> {
        let r = r.into_inner();
        self.s.cuda_registrations.lock().unwrap().push((
            r.name.clone(),
            r.raw_handle.to_vec(),
            r.device_id,
            r.byte_size,
        ));
        // the device memory, opened through the handle as Triton does
        let b64 = tritonctl::inputs::codec::b64_encode(&r.raw_handle);
        match crate::common::open_cuda_handle(&b64) {
            Ok(m) if m.lock().unwrap().len() as u64 >= r.byte_size => {}
            Ok(_) => return Err(Status::invalid_argument("region larger than its memory")),
            Err(e) => return Err(Status::invalid_argument(e)),
        }
        let mut regions = self.s.regions.lock().unwrap();
        if regions.contains_key(&r.name) {
            return Err(Status::already_exists(format!(
                "shared memory region '{}' already in manager",
                r.name
            )));
        }
        regions.insert(
            r.name,
            (format!("{}{b64}", crate::common::CUDA_KEY), r.byte_size),
        );
        Ok(Response::new(pb::CudaSharedMemoryRegisterResponse {}))
    }

    async fn cuda_shared_memory_unregister(
        &self,
        r: Request<pb::CudaSharedMemoryUnregisterRequest>,
    ) -> Result<Response<pb::CudaSharedMemoryUnregisterResponse>, Status> {
        let name = r.into_inner().name;
        // the memory must still be there: freed only after this
        if !matches!(
            region_file(&self.s, &name),
            Ok((crate::common::ShmRegion::Cuda(_), _))
        ) {
            return Err(self.bad(format!(
                "CUDA region '{name}' unregistered after its memory was freed, or unknown"
            )));
        }
        self.s.regions.lock().unwrap().remove(&name);
        self.s.cuda_unregistered.lock().unwrap().push(name);
        Ok(Response::new(pb::CudaSharedMemoryUnregisterResponse {}))
    }

    type ModelStreamInferStream = std::pin::Pin<
        Box<dyn tokio_stream::Stream<Item = Result<pb::ModelStreamInferResponse, Status>> + Send>,
    >;

    async fn model_stream_infer(
        &self,
        r: Request<tonic::Streaming<pb::ModelInferRequest>>,
    ) -> Result<Response<Self::ModelStreamInferStream>, Status> {
        let mut inbound = r.into_inner();
        let me = self.clone();
        me.s.streams_opened.fetch_add(1, Ordering::SeqCst);
        let open = me.s.streams_open.fetch_add(1, Ordering::SeqCst) + 1;
        me.s.max_streams_open.fetch_max(open, Ordering::SeqCst);
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            // requests of one stream are answered in order, like Triton
            while let Some(Ok(req)) = inbound.next().await {
                let n = me.s.streamed.fetch_add(1, Ordering::SeqCst) + 1;
                let id = req.id.clone();
                let name = req.model_name.clone();
                if id.is_empty() {
                    me.bad("a stream request without id".into());
                }
                if name == "dec" {
                    if me.decoupled(req, n, &tx).await {
                        continue;
                    }
                    break;
                }
                let reply = match me.handle(req, n).await {
                    Ok(resp) => pb::ModelStreamInferResponse {
                        error_message: String::new(),
                        infer_response: Some(resp),
                    },
                    Err(s) => pb::ModelStreamInferResponse {
                        error_message: s.message().to_string(),
                        infer_response: Some(pb::ModelInferResponse {
                            model_name: name,
                            id,
                            ..Default::default()
                        }),
                    },
                };
                if tx.send(Ok(reply)).is_err() {
                    break;
                }
            }
            me.s.streams_open.fetch_sub(1, Ordering::SeqCst);
        });
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::UnboundedReceiverStream::new(rx),
        )))
    }
}

/// A server on a free loopback port, in its own thread and runtime.
pub(crate) struct Server {
    port: u16,
    state: Arc<State>,
}

impl Server {
    pub(crate) fn start(b: Behaviour) -> Server {
        let state = Arc::new(State::default());
        let svc = Svc {
            b,
            s: state.clone(),
        };
        let (ptx, prx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                ptx.send(l.local_addr().unwrap().port()).unwrap();
                // without Nagle's algorithm, as Triton's gRPC server: a
                // small reply is not held back until the previous one is
                // acknowledged
                let incoming = tokio_stream::wrappers::TcpListenerStream::new(l).map(|c| {
                    c.inspect(|c| {
                        let _ = c.set_nodelay(true);
                    })
                });
                tonic::transport::Server::builder()
                    .add_service(
                        GrpcInferenceServiceServer::new(svc)
                            .max_decoding_message_size(usize::MAX)
                            .max_encoding_message_size(usize::MAX),
                    )
                    .serve_with_incoming(incoming)
                    .await
                    .unwrap();
            });
        });
        let port = prx.recv_timeout(Duration::from_secs(10)).unwrap();
        Server { port, state }
    }

    pub(crate) fn url(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub(crate) fn bad(&self) -> Vec<String> {
        self.state.bad.lock().unwrap().clone()
    }
}

/// A `tritonctl perf` run killed after this long fails as a hang.
const HANG: Duration = Duration::from_secs(60);

fn perf_json(args: &[&str]) -> (i32, Value) {
    let mut a = args.to_vec();
    a.extend(["--format", "json"]);
    let (code, out, err) = tritonctl().arg("perf").args(&a).timeout(HANG).run().parts();
    let v: Value = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}\nstderr:\n{err}"));
    crate::perf::assert_matches_schema(&v);
    (code, v)
}

fn u(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("{v} is not an unsigned integer"))
}

#[test]
fn unary_closed_loop() {
    let s = Server::start(Behaviour::default());
    let url = s.url();
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &url,
        "-i",
        "grpc",
        "--concurrency-range",
        "2",
        "--request-count",
        "100",
        "-b",
        "3",
    ]);
    assert_eq!(code, 0, "{doc:#}");
    assert!(s.bad().is_empty(), "{:?}", s.bad());
    assert_eq!(doc["protocol"], "grpc");
    assert_eq!(doc["url"], url.as_str());
    let l = &doc["levels"][0];
    assert_eq!(u(&l["requests"]), 100, "{l:#}");
    assert_eq!(u(&l["errors"]), 0, "{l:#}");
    // the server's statistics came over gRPC
    assert!(u(&l["server"]["requests"]) >= 90, "{l:#}");
    assert!(s.state.unary.load(Ordering::SeqCst) >= 100);
    assert_eq!(s.state.streamed.load(Ordering::SeqCst), 0);
    assert_client_times(l);
}

/// The client's marshalling and unmarshalling times are measured, and are
/// a part of the latency.
fn assert_client_times(l: &Value) {
    let send = l["client"]["send_us"].as_f64().unwrap();
    let recv = l["client"]["recv_us"].as_f64().unwrap();
    let mean = l["latency_us"]["mean"].as_f64().unwrap();
    assert!(send > 0.0 && recv > 0.0 && send + recv < mean, "{l:#}");
}

#[test]
fn streaming_uses_one_stream_per_request_in_flight() {
    let s = Server::start(Behaviour::default());
    let (code, doc) = perf_json(&[
        "-m",
        "m",
        "-u",
        &s.url(),
        "-i",
        "grpc",
        "--streaming",
        "--concurrency-range",
        "4",
        "--request-count",
        "200",
    ]);
    assert_eq!(code, 0, "{doc:#}");
    assert!(s.bad().is_empty(), "{:?}", s.bad());
    let l = &doc["levels"][0];
    assert_eq!(u(&l["requests"]), 200, "{l:#}");
    assert_eq!(u(&l["errors"]), 0, "{l:#}");
    assert_eq!(s.state.unary.load(Ordering::SeqCst), 0);
    assert!(s.state.streamed.load(Ordering::SeqCst) >= 200);
    assert_client_times(l);
    let opened = s.state.streams_opened.load(Ordering::SeqCst);
    assert!(
        (1..=4).contains(&opened),
        "{opened} streams for concurrency 4"
    );
}

#[test]
fn sequences_stay_in_order_at_concurrency_16() {
    for streaming in [false, true] {
        let s = Server::start(Behaviour::default());
        let url = s.url();
        let mut args = vec![
            "-m",
            "seq",
            "-u",
            &url,
            "-i",
            "grpc",
            "--concurrency-range",
            "16",
            "--request-count",
            "400",
            "--sequence-length",
            "5",
        ];
        if streaming {
            args.push("--streaming");
        }
        let (code, doc) = perf_json(&args);
        assert_eq!(code, 0, "streaming {streaming}: {doc:#}");
        assert!(s.bad().is_empty(), "streaming {streaming}: {:?}", s.bad());
        let l = &doc["levels"][0];
        assert_eq!(u(&l["errors"]), 0, "{l:#}");
        assert!(s.state.ended.load(Ordering::SeqCst) >= 16, "{l:#}");
        assert!(l["sequence_latency_us"].is_object(), "{l:#}");
        // every sequence was ended
        let live = s
            .state
            .sequences
            .lock()
            .unwrap()
            .values()
            .filter(|e| e.0)
            .count();
        assert_eq!(live, 0, "streaming {streaming}");
    }
}

#[test]
fn ensemble_with_a_stateful_step_over_grpc() {
    for streaming in [false, true] {
        let s = Server::start(Behaviour::default());
        let url = s.url();
        let mut args = vec![
            "-m",
            "ens",
            "-u",
            &url,
            "-i",
            "grpc",
            "--concurrency-range",
            "4",
            "--request-count",
            "80",
            "--sequence-length",
            "4",
        ];
        if streaming {
            args.push("--streaming");
        }
        let (code, doc) = perf_json(&args);
        assert_eq!(code, 0, "streaming {streaming}: {doc:#} {:?}", s.bad());
        // the server fails a request to "ens" without a valid sequence id
        // and flags, or out of order
        assert!(s.bad().is_empty(), "streaming {streaming}: {:?}", s.bad());
        let l = &doc["levels"][0];
        assert_eq!(u(&l["errors"]), 0, "{l:#}");
        assert!(s.state.ended.load(Ordering::SeqCst) >= 4, "{l:#}");
        let seqs = s.state.sequences.lock().unwrap();
        assert!(seqs.values().all(|e| !e.0), "a sequence left live");
        let steps: u64 = seqs.values().map(|e| e.2).sum();
        assert_eq!(
            steps,
            s.state.unary.load(Ordering::SeqCst) + s.state.streamed.load(Ordering::SeqCst)
        );
        drop(seqs);
        // the configs of both steps were asked for over gRPC
        let asked = s.state.configs.lock().unwrap().clone();
        assert_eq!(asked, ["ens", "m", "seq"], "{asked:?}");
        // per composing model: the server's 2 µs queue and 5 µs infer
        let steps = l["server"]["composing_models"].as_array().unwrap();
        let names: Vec<(&str, &str)> = steps
            .iter()
            .map(|c| (c["model"].as_str().unwrap(), c["version"].as_str().unwrap()))
            .collect();
        assert_eq!(names, [("m", "1"), ("seq", "1")]);
        for c in steps {
            assert_eq!(c["queue_us"].as_f64(), Some(2.0), "{c:#}");
            assert_eq!(c["compute_infer_us"].as_f64(), Some(5.0), "{c:#}");
            assert!(u(&c["requests"]) >= u(&l["requests"]), "{c:#}");
        }
    }
}

#[test]
fn errors_are_counted_by_kind() {
    for (streaming, key) in [(false, "grpc_internal"), (true, "grpc_stream_error")] {
        let s = Server::start(Behaviour {
            fail: vec![3, 7],
            ..Behaviour::default()
        });
        let url = s.url();
        let mut args = vec![
            "-m",
            "m",
            "-u",
            &url,
            "-i",
            "grpc",
            "--concurrency-range",
            "2",
            "--request-count",
            "200",
        ];
        if streaming {
            args.push("--streaming");
        }
        let (code, doc) = perf_json(&args);
        assert_eq!(code, 1, "error rate 20 % is above the default 0");
        let l = &doc["levels"][0];
        assert_eq!(u(&l["requests"]), 200, "{l:#}");
        assert_eq!(u(&l["errors"]), 40, "{l:#}");
        let mut want = serde_json::Map::new();
        want.insert(key.into(), 40.into());
        assert_eq!(l["errors_by_kind"], Value::Object(want), "{l:#}");
    }
}

#[test]
fn timeouts_end_requests() {
    for streaming in [false, true] {
        let s = Server::start(Behaviour {
            stall: Some((3, Duration::from_secs(2))),
            ..Behaviour::default()
        });
        let url = s.url();
        let started = Instant::now();
        let mut args = vec![
            "-m",
            "m",
            "-u",
            &url,
            "-i",
            "grpc",
            "--duration",
            "1",
            "--timeout",
            "200",
            "--max-error-rate",
            "1",
        ];
        if streaming {
            args.push("--streaming");
        }
        let (code, doc) = perf_json(&args);
        assert_eq!(code, 0, "{doc:#}");
        let l = &doc["levels"][0];
        assert!(u(&l["errors_by_kind"]["timeout"]) >= 1, "{l:#}");
        assert!(u(&l["requests"]) > u(&l["errors"]), "{l:#}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}

#[test]
fn refused_and_unknown_model_are_exit_2() {
    let port = crate::common::closed_port();
    let url = format!("127.0.0.1:{port}");
    let (code, out, err) = tritonctl()
        .arg("perf")
        .args(["-m", "m", "-u", &url, "-i", "grpc", "--timeout", "2000"])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("cannot connect") && err.contains(&port.to_string()),
        "{err}"
    );

    let s = Server::start(Behaviour::default());
    let (code, _, err) = tritonctl()
        .arg("perf")
        .args(["-m", "nope", "-u", &s.url(), "-i", "grpc"])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 2);
    assert!(err.contains("'nope'") && err.contains("NOT_FOUND"), "{err}");
}

#[test]
fn grpc_without_url_goes_to_port_8001() {
    // refused, or (with a server running there) no such model: either
    // way the error names where perf went
    let model = "tritonctl-test-no-such-model";
    let (code, out, err) = tritonctl()
        .arg("perf")
        .args(["-m", model, "-i", "grpc", "--timeout", "2000"])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("localhost:8001"), "{err}");
    let (code, out, err) = tritonctl()
        .arg("perf")
        .args(["-m", model, "--timeout", "2000"])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("localhost:8000"), "{err}");
}

#[test]
fn streaming_needs_grpc() {
    let (code, _, err) = tritonctl()
        .arg("perf")
        .args(["-m", "m", "-u", "127.0.0.1:1", "--streaming"])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 2);
    assert!(err.contains("--streaming") && err.contains("grpc"), "{err}");
}

#[test]
fn messages_above_4_mib_go_through() {
    // 8 x 200000 FP32 values: 6.4 MB each way, above gRPC's usual 4 MiB
    let s = Server::start(Behaviour::default());
    let (code, doc) = perf_json(&[
        "-m",
        "big",
        "-u",
        &s.url(),
        "-i",
        "grpc",
        "-b",
        "8",
        "--request-count",
        "3",
    ]);
    assert_eq!(code, 0, "{doc:#}");
    assert!(s.bad().is_empty(), "{:?}", s.bad());
    let l = &doc["levels"][0];
    assert_eq!(u(&l["requests"]), 3, "{l:#}");
    assert_eq!(u(&l["errors"]), 0, "{l:#}");
}

#[test]
fn input_dims_no_memory_holds_are_refused_before_allocating() {
    let s = Server::start(Behaviour::default());
    let (code, out, err) = tritonctl()
        .arg("perf")
        .args(["-m", "huge", "-u", &s.url(), "-i", "grpc"])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("input 'X'")
            && err.contains("[1, 1000000000000]")
            && err.contains("4000000000000 bytes")
            && err.contains("1073741824 bytes")
            && err.contains("--max-input-bytes"),
        "{err}"
    );
    assert_eq!(s.state.unary.load(Ordering::SeqCst), 0);
}

#[test]
fn answers_above_max_response_bytes_are_not_read() {
    let s = Server::start(Behaviour::default());
    let url = s.url();
    // inference answers of 800 kB, unary and streamed
    for streaming in [false, true] {
        let mut args = vec![
            "-m",
            "big",
            "-u",
            &url,
            "-i",
            "grpc",
            "--request-count",
            "3",
            "--max-response-bytes",
            "100000",
            "--format",
            "json",
        ];
        if streaming {
            args.push("--streaming");
        }
        let (code, out, err) = tritonctl()
            .arg("perf")
            .args(&args)
            .timeout(HANG)
            .run()
            .parts();
        assert_eq!(code, 1, "{out}{err}");
        let doc: Value = serde_json::from_str(&out).unwrap();
        let l = &doc["levels"][0];
        assert!(u(&l["errors_by_kind"]["response_too_large"]) >= 1, "{l:#}");
        assert!(
            err.contains("larger than 100000 bytes") && err.contains("--max-response-bytes"),
            "{err}"
        );
    }
    // the metadata answer (about 100 bytes) above a limit of 10
    let (code, out, err) = tritonctl()
        .arg("perf")
        .args([
            "-m",
            "m",
            "-u",
            &url,
            "-i",
            "grpc",
            "--max-response-bytes",
            "10",
        ])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("larger than 10 bytes") && err.contains("--max-response-bytes"),
        "{err}"
    );
}

/// A run against model "dec" over gRPC streams, with `args` added.
fn dec_run(s: &Server, args: &[&str]) -> (i32, Value) {
    let url = s.url();
    let mut a = vec!["-m", "dec", "-u", &url, "-i", "grpc", "--streaming"];
    a.extend_from_slice(args);
    perf_json(&a)
}

fn us(d: Duration) -> f64 {
    d.as_micros() as f64
}

/// Every successful request had the `n` responses of "dec", the first
/// after about `d.first`, the others `d.gap` apart (sleeps on a shared
/// machine are late, never early: the upper bounds leave room for a busy
/// machine running tests in parallel).
fn assert_streamed(l: &Value, d: &Dec) {
    let per = &l["responses_per_request"];
    assert_eq!(per["mean"].as_f64(), Some(d.n as f64), "{l:#}");
    assert_eq!(u(&per["max"]), d.n, "{l:#}");
    assert!(u(&l["responses"]) >= d.n * u(&l["requests"]), "{l:#}");
    let first = l["first_response_us"]["p50"].as_f64().unwrap();
    assert!(
        first >= us(d.first) && first < us(d.first) * 2.0,
        "first response at {first} µs, the model waits {:?}: {l:#}",
        d.first
    );
    let gap = l["inter_response_us"]["p50"].as_f64().unwrap();
    assert!(
        gap >= us(d.gap) * 0.8 && gap < us(d.gap) * 2.0,
        "responses {gap} µs apart, the model waits {:?}: {l:#}",
        d.gap
    );
    // the latency runs to the last response
    let latency = l["latency_us"]["p50"].as_f64().unwrap();
    let whole = us(d.first) + us(d.gap) * (d.n - 1) as f64;
    assert!(latency >= whole * 0.95 && latency < whole * 2.0, "{l:#}");
}

#[test]
fn decoupled_closed_loop_counts_every_response() {
    for final_with_output in [false, true] {
        let dec = Dec {
            n: 5,
            final_with_output,
            ..Dec::default()
        };
        let s = Server::start(Behaviour {
            dec: dec.clone(),
            ..Behaviour::default()
        });
        let (code, doc) = dec_run(
            &s,
            &["--concurrency-range", "1:4:3", "--request-count", "24"],
        );
        assert_eq!(code, 0, "{doc:#}");
        assert!(s.bad().is_empty(), "{:?}", s.bad());
        assert_eq!(doc["decoupled"], true, "{doc:#}");
        for l in doc["levels"].as_array().unwrap() {
            assert_eq!(u(&l["requests"]), 24, "{l:#}");
            assert_eq!(u(&l["errors"]), 0, "{l:#}");
            assert_eq!(u(&l["cancelled"]), 0, "{l:#}");
            assert_eq!(u(&l["responses"]), 5 * 24, "{l:#}");
            assert_streamed(l, &dec);
            assert_client_times(l);
        }
        // one stream per request in flight, reused
        let opened = s.state.streams_opened.load(Ordering::SeqCst);
        assert!((1..=5).contains(&opened), "{opened} streams");
        assert!(s.state.cancelled.lock().unwrap().is_empty());
    }
}

#[test]
fn decoupled_open_loop() {
    let dec = Dec::default();
    let s = Server::start(Behaviour {
        dec: dec.clone(),
        ..Behaviour::default()
    });
    let (code, doc) = dec_run(
        &s,
        &[
            "--request-rate-range",
            "40",
            "--duration",
            "1.5",
            "--request-distribution",
            "poisson",
            "--max-error-rate",
            "0",
        ],
    );
    assert_eq!(code, 0, "{doc:#}");
    assert!(s.bad().is_empty(), "{:?}", s.bad());
    let l = &doc["levels"][0];
    assert!(u(&l["requests"]) >= 30, "{l:#}");
    assert_eq!(u(&l["errors"]), 0, "{l:#}");
    assert_streamed(l, &dec);
}

#[test]
fn decoupled_without_streaming_flag_goes_over_streams() {
    let s = Server::start(Behaviour::default());
    let url = s.url();
    let (code, out, err) = tritonctl()
        .arg("perf")
        .args([
            "-m",
            "dec",
            "-u",
            &url,
            "-i",
            "grpc",
            "--request-count",
            "8",
            "--format",
            "json",
        ])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("model 'dec' is decoupled") && err.contains("ModelStreamInfer"),
        "{err}"
    );
    let doc: Value = serde_json::from_str(&out).unwrap();
    let l = &doc["levels"][0];
    assert_eq!(u(&l["errors"]), 0, "{l:#}");
    assert_eq!(u(&l["responses"]), 4 * 8, "{l:#}");
    assert_eq!(s.state.unary.load(Ordering::SeqCst), 0);
    assert!(s.bad().is_empty(), "{:?}", s.bad());
}

/// Every tenth request, from the third, goes wrong with `fault`: it is
/// counted as `key` and keeps the `partial` responses it had.
fn decoupled_faults_are_counted(fault: Fault, key: &str, partial: usize) {
    let s = Server::start(Behaviour {
        dec: Dec {
            faults: vec![(3, fault)],
            ..Dec::default()
        },
        ..Behaviour::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("requests.jsonl");
    let export_arg = export.to_str().unwrap();
    let args = [
        "--concurrency-range",
        "2",
        "--request-count",
        "40",
        "--export-requests",
        export_arg,
    ];
    let (code, doc) = dec_run(&s, &args);
    assert_eq!(
        code, 1,
        "an error rate of 10 % is above the default 0: {doc:#}"
    );
    let l = &doc["levels"][0];
    assert_eq!(u(&l["requests"]), 40, "{l:#}");
    assert_eq!(u(&l["errors"]), 4, "{l:#}");
    let mut want = serde_json::Map::new();
    want.insert(key.into(), 4.into());
    assert_eq!(l["errors_by_kind"], Value::Object(want), "{l:#}");
    // the others are whole
    assert_eq!(
        l["responses_per_request"]["mean"].as_f64(),
        Some(4.0),
        "{l:#}"
    );
    // a failed request keeps the responses it had
    let text = std::fs::read_to_string(&export).unwrap();
    let failed: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|v| v["error"] == key)
        .collect();
    assert_eq!(failed.len(), 4, "{text}");
    for v in failed {
        assert_eq!(v["response_us"].as_array().unwrap().len(), partial, "{v}");
    }
    // the same run passes with a tolerated error rate
    let mut a = args.to_vec();
    a.extend(["--max-error-rate", "0.2"]);
    let (code, doc) = dec_run(&s, &a);
    assert_eq!(code, 0, "{doc:#}");
}

#[test]
fn decoupled_stream_ending_before_the_final_response_is_incomplete() {
    decoupled_faults_are_counted(Fault::Stop(2), "stream_incomplete", 2);
}

#[test]
fn decoupled_error_reply_mid_stream_is_a_stream_error() {
    decoupled_faults_are_counted(Fault::Error(2), "stream_error", 2);
}

#[test]
fn decoupled_malformed_reply_is_counted() {
    decoupled_faults_are_counted(Fault::Malformed(2), "malformed", 2);
}

#[test]
fn decoupled_stream_that_never_ends_times_out_and_is_cancelled() {
    let s = Server::start(Behaviour {
        dec: Dec {
            faults: vec![(3, Fault::Endless)],
            ..Dec::default()
        },
        ..Behaviour::default()
    });
    let started = Instant::now();
    let (code, doc) = dec_run(
        &s,
        &[
            "--concurrency-range",
            "2",
            "--duration",
            "2",
            "--timeout",
            "300",
            "--max-error-rate",
            "1",
        ],
    );
    let ended = Instant::now();
    assert_eq!(code, 0, "{doc:#}");
    let l = &doc["levels"][0];
    assert!(u(&l["errors_by_kind"]["timeout"]) >= 1, "{l:#}");
    assert_eq!(u(&l["errors"]), u(&l["errors_by_kind"]["timeout"]), "{l:#}");
    assert!(u(&l["requests"]) > u(&l["errors"]), "{l:#}");
    assert!(started.elapsed() < Duration::from_secs(15));
    // the server saw the endless request cancelled while the run went on
    let seen = s.state.cancelled.lock().unwrap().clone();
    assert!(
        seen.first()
            .is_some_and(|t| *t + Duration::from_millis(500) < ended),
        "{seen:?}"
    );
}

#[test]
fn decoupled_requests_still_streaming_at_the_end_are_cancelled() {
    // 8 responses over 0.8 s; a level of 1 s cuts the second request of
    // each slot short
    let s = Server::start(Behaviour {
        dec: Dec {
            n: 8,
            first: Duration::from_millis(100),
            gap: Duration::from_millis(100),
            ..Dec::default()
        },
        ..Behaviour::default()
    });
    let started = Instant::now();
    let (code, doc) = dec_run(
        &s,
        &[
            "--concurrency-range",
            "2",
            "--duration",
            "1",
            "--max-error-rate",
            "0",
        ],
    );
    assert_eq!(code, 0, "{doc:#}");
    let l = &doc["levels"][0];
    assert_eq!(u(&l["errors"]), 0, "{l:#}");
    assert!(u(&l["cancelled"]) >= 1, "{l:#}");
    assert!(u(&l["requests"]) >= 1, "{l:#}");
    assert_eq!(l["responses_per_request"]["max"], 8, "{l:#}");
    assert!(started.elapsed() < Duration::from_secs(10));
    // the server learns it: its next response finds the stream reset
    let deadline = Instant::now() + Duration::from_secs(2);
    while s.state.cancelled.lock().unwrap().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!s.state.cancelled.lock().unwrap().is_empty());
}

#[test]
fn decoupled_export_lists_every_response() {
    let s = Server::start(Behaviour::default());
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("requests.jsonl");
    let (code, doc) = dec_run(
        &s,
        &[
            "--concurrency-range",
            "2",
            "--request-count",
            "10",
            "--export-requests",
            export.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{doc:#}");
    let text = std::fs::read_to_string(&export).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 10, "{text}");
    let first = us(Dec::default().first) as u64;
    let gap = us(Dec::default().gap) as u64;
    for v in &lines {
        assert_eq!(v["error"], Value::Null, "{v}");
        let send = u(&v["send_us"]);
        let r: Vec<u64> = v["response_us"].as_array().unwrap().iter().map(u).collect();
        assert_eq!(r.len(), 4, "{v}");
        assert!(r.windows(2).all(|w| w[1] >= w[0]), "{v}: in order");
        // the server sends response k no earlier than `first + k * gap`
        // after the request came; a response read late can bring the next
        // gap closer, so only the time since the send is bounded
        for (k, at) in r.iter().enumerate() {
            assert!(
                *at + 1 >= send + first + k as u64 * gap,
                "{v}: response {k}"
            );
        }
    }
}

/// An HTTP server that knows only model "dec", decoupled: enough for
/// `perf` to read its metadata and config. Counts inference requests.
fn http_decoupled_server() -> (String, Arc<AtomicU64>) {
    use std::io::{BufReader, Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("127.0.0.1:{}", l.local_addr().unwrap().port());
    let infers = Arc::new(AtomicU64::new(0));
    let counted = infers.clone();
    std::thread::spawn(move || {
        for stream in l.incoming() {
            let Ok(stream) = stream else { return };
            let counted = counted.clone();
            std::thread::spawn(move || {
                let mut out = stream.try_clone().unwrap();
                let mut r = BufReader::new(stream);
                while let Some((_, path, headers)) = crate::common::read_request_head(&mut r) {
                    let len: usize = headers
                        .get("content-length")
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(0);
                    let mut body = vec![0; len];
                    if r.read_exact(&mut body).is_err() {
                        return;
                    }
                    let tensor =
                        serde_json::json!({"name": "X", "datatype": "FP32", "shape": [-1, 4]});
                    let (status, doc) = match path.as_str() {
                        "/v2/models/dec" => (
                            200,
                            serde_json::json!({
                                "name": "dec", "versions": ["1"], "platform": "python",
                                "inputs": [tensor], "outputs": [{"name": "Y", "datatype": "FP32", "shape": [-1, 4]}],
                            }),
                        ),
                        "/v2/models/dec/config" => (
                            200,
                            serde_json::json!({
                                "name": "dec", "backend": "python", "max_batch_size": 8,
                                "input": [{"name": "X", "data_type": "TYPE_FP32", "dims": [4]}],
                                "output": [{"name": "Y", "data_type": "TYPE_FP32", "dims": [4]}],
                                "model_transaction_policy": {"decoupled": true},
                            }),
                        ),
                        p => {
                            if p.ends_with("/infer") {
                                counted.fetch_add(1, Ordering::SeqCst);
                            }
                            (404, serde_json::json!({"error": "not here"}))
                        }
                    };
                    let body = doc.to_string();
                    let head = format!(
                        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                        body.len()
                    );
                    if out.write_all(format!("{head}{body}").as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (url, infers)
}

#[test]
fn decoupled_over_http_infer_is_refused() {
    let (url, infers) = http_decoupled_server();
    let (code, out, err) = tritonctl()
        .arg("perf")
        .args(["-m", "dec", "-u", &url, "--request-count", "5"])
        .timeout(HANG)
        .run()
        .parts();
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("model 'dec' is decoupled")
            && err.contains("-i grpc")
            && err.contains("--endpoint generate"),
        "{err}"
    );
    assert_eq!(infers.load(Ordering::SeqCst), 0);
}

#[test]
fn shared_memory_system_over_grpc_unary_and_streams() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data.json");
    std::fs::write(
        &file,
        r#"{"data": [{"X": [1, 2, 3, 4]}, {"X": [5, 6, 7, 8]}]}"#,
    )
    .unwrap();
    for streaming in [false, true] {
        let s = Server::start(Behaviour::default());
        let url = s.url();
        let mut args = vec![
            "-m",
            "m",
            "-u",
            &url,
            "-i",
            "grpc",
            "--input-data",
            file.to_str().unwrap(),
            "--shared-memory",
            "system",
            "--concurrency-range",
            "3",
            "--request-count",
            "30",
        ];
        if streaming {
            args.push("--streaming");
        }
        let (code, doc) = perf_json(&args);
        assert_eq!(code, 0, "{doc:#} {:?}", s.bad());
        let st = &s.state;
        let n = st.unary.load(Ordering::SeqCst) + st.streamed.load(Ordering::SeqCst);
        assert!(n >= 31, "{n}");
        // every request named its tensors in shared memory; none carried
        // raw bytes
        assert_eq!(st.raw_requests.load(Ordering::SeqCst), 0);
        assert_eq!(st.shm_inputs.load(Ordering::SeqCst), n);
        assert_eq!(st.shm_outputs.load(Ordering::SeqCst), n);
        for v in st.x_values.lock().unwrap().iter() {
            assert!(
                *v == [1.0, 2.0, 3.0, 4.0] || *v == [5.0, 6.0, 7.0, 8.0],
                "{v:?} is not an entry"
            );
        }
        assert_eq!(u(&doc["shared_memory"]["output_regions"]), 3);
        assert_eq!(u(&doc["shared_memory"]["output_bytes_read"]), (n - 1) * 16);
        // everything unregistered and unlinked
        assert!(st.regions.lock().unwrap().is_empty());
        let keys = st.shm_keys.lock().unwrap();
        assert_eq!(keys.len(), 4);
        for k in keys.iter() {
            assert!(
                !std::path::Path::new(&format!("/dev/shm{k}")).exists(),
                "{k} left"
            );
        }
    }
}

#[test]
fn shared_memory_cuda_over_grpc_unary_and_streams() {
    use tritonctl::perf::device::fake::FakeDevice;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data.json");
    std::fs::write(
        &file,
        r#"{"data": [{"X": [1, 2, 3, 4]}, {"X": [5, 6, 7, 8]}]}"#,
    )
    .unwrap();
    for streaming in [false, true] {
        let s = Server::start(Behaviour::default());
        let dev = FakeDevice::new(2);
        let opts = crate::perf::cuda_options(
            &s.url(),
            tritonctl::perf::client::Protocol::Grpc { streaming },
            dev.clone(),
            &file,
            3,
            1,
        );
        let report = tritonctl::perf::load::run(&opts, Default::default(), None)
            .unwrap_or_else(|e| panic!("{e} {:?}", s.bad()));
        assert!(s.bad().is_empty(), "{:?}", s.bad());
        let st = &s.state;
        let n = st.unary.load(Ordering::SeqCst) + st.streamed.load(Ordering::SeqCst);
        assert!(n >= 21, "{n}");
        // every request named its tensors in device memory (read and
        // written by the server through the IPC handles); none carried
        // raw bytes
        assert_eq!(st.raw_requests.load(Ordering::SeqCst), 0);
        assert_eq!(st.shm_inputs.load(Ordering::SeqCst), n);
        assert_eq!(st.shm_outputs.load(Ordering::SeqCst), n);
        for v in st.x_values.lock().unwrap().iter() {
            assert!(
                *v == [1.0, 2.0, 3.0, 4.0] || *v == [5.0, 6.0, 7.0, 8.0],
                "{v:?} is not an entry"
            );
        }
        // CudaSharedMemoryRegister: a 64-byte handle, the device, the
        // region's size: the input region (two entries of 16 bytes,
        // 64-byte aligned), then one output region per request in flight
        let regs = st.cuda_registrations.lock().unwrap().clone();
        assert_eq!(regs.len(), 4, "{regs:?}");
        for (i, (name, handle, device, size)) in regs.iter().enumerate() {
            assert_eq!(handle.len(), 64);
            assert_eq!(*device, 2);
            assert_eq!(*size, if i == 0 { 80 } else { 102_400 }, "{name}");
            assert!(name.starts_with("tritonctl_"), "{name}");
        }
        // all unregistered (the server checks: before the memory was
        // freed), then all freed
        let mut gone = st.cuda_unregistered.lock().unwrap().clone();
        let mut names: Vec<String> = regs.iter().map(|r| r.0.clone()).collect();
        gone.sort();
        names.sort();
        assert_eq!(gone, names);
        assert!(st.regions.lock().unwrap().is_empty());
        assert_eq!(dev.freed.load(Ordering::SeqCst), 4);
        let shm = report.shared_memory.as_ref().unwrap();
        assert_eq!((shm.kind.as_str(), shm.device_id), ("cuda", Some(2)));
        assert_eq!(shm.output_bytes_read, (n - 1) * 16);
    }
}

#[test]
#[cfg(unix)]
fn shared_memory_is_unregistered_over_grpc_when_perf_is_interrupted() {
    let s = Server::start(Behaviour::default());
    let mut child = tritonctl()
        .args(["perf", "-m", "m", "-u", &s.url(), "-i", "grpc"])
        .args(["--shared-memory", "system", "--concurrency-range", "2"])
        .args(["--duration", "60", "--progress", "never"])
        .command_with_default_signals()
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while s.state.shm_inputs.load(Ordering::SeqCst) < 10 {
        assert!(start.elapsed() < HANG, "no load");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(s.state.regions.lock().unwrap().len(), 3);
    send_signal(&child, "TERM");
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + 15), "{status:?}");
    assert!(s.state.regions.lock().unwrap().is_empty());
    for k in s.state.shm_keys.lock().unwrap().iter() {
        assert!(
            !std::path::Path::new(&format!("/dev/shm{k}")).exists(),
            "{k} left"
        );
    }
}
