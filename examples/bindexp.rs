use ort::session::{OutputSelector, RunOptions, Session};
use ort::value::Tensor;
use std::time::Instant;
fn main() {
    let env = ort::init_from(std::env::var("ORT_DYLIB_PATH").unwrap())
        .unwrap()
        .with_telemetry(false)
        .build()
        .unwrap();
    let path = "testdata/run/accumulate/1/model.onnx";
    let mk = || {
        Session::builder(&env)
            .unwrap()
            .with_intra_threads(1)
            .unwrap()
            .with_inter_threads(1)
            .unwrap()
            .with_parallel_execution(false)
            .unwrap()
            .commit_from_file(path)
            .unwrap()
    };
    let n = 200_000;
    let alloc = ort::memory::Allocator::default();
    for round in 0..3 {
        // run with preallocated outputs (what run_into does), state copied back
        let mut s = mk();
        let x = Tensor::<f32>::from_array(([4usize, 1, 5], vec![1.0f32; 20])).unwrap();
        let mut st = Tensor::<f32>::from_array(([1usize, 5], vec![0.0f32; 5])).unwrap();
        let r = Tensor::<bool>::from_array(([1usize, 1], vec![false])).unwrap();
        let sel = OutputSelector::default()
            .preallocate(
                "Output",
                Tensor::<f32>::new(&alloc, [4usize, 1, 5]).unwrap(),
            )
            .preallocate(
                "Accumulate_Out",
                Tensor::<f32>::new(&alloc, [1usize, 5]).unwrap(),
            );
        let opts = RunOptions::new().unwrap().with_outputs(sel);
        let t = Instant::now();
        for _ in 0..n {
            let out = s
                .run_with_options(
                    ort::inputs!["Input" => &x, "Accumulate_In" => &st, "ResetSequence" => &r],
                    &opts,
                )
                .unwrap();
            let (_, so) = out["Accumulate_Out"].try_extract_tensor::<f32>().unwrap();
            let src: [f32; 5] = so.try_into().unwrap();
            drop(out);
            let (_, dst) = st.try_extract_tensor_mut().unwrap();
            dst.copy_from_slice(&src);
        }
        let pre = t.elapsed().as_secs_f64() * 1e6 / n as f64;
        // binding: inputs bound once, outputs bound to preallocated, state copied back
        let mut s = mk();
        let mut b = s.create_binding().unwrap();
        let x = Tensor::<f32>::from_array(([4usize, 1, 5], vec![1.0f32; 20])).unwrap();
        let mut st = Tensor::<f32>::from_array(([1usize, 5], vec![0.0f32; 5])).unwrap();
        let r = Tensor::<bool>::from_array(([1usize, 1], vec![false])).unwrap();
        b.bind_input("Input", &x).unwrap();
        b.bind_input("Accumulate_In", &st).unwrap();
        b.bind_input("ResetSequence", &r).unwrap();
        let o1 = Tensor::<f32>::new(&alloc, [4usize, 1, 5]).unwrap();
        let o2 = Tensor::<f32>::new(&alloc, [1usize, 5]).unwrap();
        b.bind_output("Output", o1).unwrap();
        b.bind_output("Accumulate_Out", o2).unwrap();
        let t = Instant::now();
        for _ in 0..n {
            let out = s.run_binding(&b).unwrap();
            let (_, so) = out["Accumulate_Out"].try_extract_tensor::<f32>().unwrap();
            let src: [f32; 5] = so.try_into().unwrap();
            drop(out);
            let (_, dst) = st.try_extract_tensor_mut().unwrap();
            dst.copy_from_slice(&src);
        }
        let bound = t.elapsed().as_secs_f64() * 1e6 / n as f64;
        println!(
            "round {round}: prealloc {pre:.2} µs  bound {bound:.2} µs  state {:?}",
            st.try_extract_tensor::<f32>().unwrap().1[0]
        );
    }
}
