//! Where `run` puts each model instance: the loaded model's instances
//! (`model::Instance`, as Triton creates them on the target server given
//! with `--gpus`) mapped to this machine's devices.
//!
//! * `--device` given: every instance runs there (the user's choice wins).
//! * Otherwise a GPU instance on `gpu:N` runs on `cuda:N` when this machine
//!   has that CUDA device and ONNX Runtime's CUDA provider is ready, else on
//!   the CPU, with a note saying why; a CPU instance runs on the CPU, unless
//!   the model has no GPU instance at all (no `--gpus`), where the automatic
//!   device of `--device` is used for every instance, as before instances
//!   were known.

use crate::model::{Device as Placement, Instance};
use crate::runtime::Device;

/// What this machine offers.
#[derive(Debug, Clone, Default)]
pub struct Machine {
    /// CUDA device ordinals usable by ONNX Runtime (empty when there is no
    /// driver, no device or no ready CUDA provider).
    pub cuda: Vec<u32>,
    /// Why there is no usable CUDA device (for the note), when `cuda` is
    /// empty.
    pub why_not: String,
}

/// The device of each instance the scheduler gives work to (passive ones
/// left out, in Triton's order), and notes for the user.
pub fn place(
    instances: &[Instance],
    explicit: Option<Device>,
    automatic: Device,
    machine: &Machine,
) -> (Vec<Device>, Vec<String>) {
    let active: Vec<&Instance> = instances.iter().filter(|i| !i.passive).collect();
    let mut notes = Vec::new();
    if let Some(d) = explicit {
        let moved: Vec<String> = active
            .iter()
            .filter(|i| match (i.device, d) {
                (Placement::Gpu(g), Device::Cuda(c)) => u32::try_from(g).ok() != Some(c),
                (Placement::Gpu(_), Device::Cpu) => true,
                _ => false,
            })
            .map(|i| format!("{} ({})", i.name, i.device))
            .collect();
        if !moved.is_empty() {
            notes.push(format!(
                "GPU instance(s) {} run on {d} (--device)",
                moved.join(", ")
            ));
        }
        return (vec![d; active.len()], notes);
    }
    if !active.iter().any(|i| matches!(i.device, Placement::Gpu(_))) {
        return (vec![automatic; active.len()], notes);
    }
    let mut on_cpu = Vec::new();
    let devices = active
        .iter()
        .map(|i| match i.device {
            Placement::Gpu(g) => match u32::try_from(g) {
                Ok(c) if machine.cuda.contains(&c) => Device::Cuda(c),
                _ => {
                    on_cpu.push(format!("{} ({})", i.name, i.device));
                    Device::Cpu
                }
            },
            Placement::Cpu | Placement::Model => Device::Cpu,
        })
        .collect();
    if !on_cpu.is_empty() {
        let why = if machine.cuda.is_empty() {
            format!(
                "this machine has no usable CUDA device: {}",
                machine.why_not
            )
        } else {
            let have: Vec<String> = machine.cuda.iter().map(|c| format!("cuda:{c}")).collect();
            format!("this machine has only {}", have.join(", "))
        };
        notes.push(format!(
            "GPU instance(s) {} run on the CPU: {why} (`tritonctl doctor` shows what is missing)",
            on_cpu.join(", ")
        ));
    }
    (devices, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inst(name: &str, device: Placement, passive: bool) -> Instance {
        Instance {
            name: name.into(),
            group: 0,
            device,
            passive,
        }
    }

    #[test]
    fn gpu_instances_go_to_their_cuda_device_when_present() {
        let list = [
            inst("m_0_0", Placement::Gpu(1), false),
            inst("m_0_0", Placement::Gpu(2), false),
            inst("m_1_0", Placement::Cpu, false),
            inst("m_2_0", Placement::Gpu(1), true),
        ];
        let machine = Machine {
            cuda: vec![0, 1],
            why_not: String::new(),
        };
        let (devices, notes) = place(&list, None, Device::Cuda(0), &machine);
        assert_eq!(devices, [Device::Cuda(1), Device::Cpu, Device::Cpu]);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("m_0_0 (gpu:2)") && notes[0].contains("only cuda:0, cuda:1"));
    }

    #[test]
    fn without_cuda_gpu_instances_run_on_the_cpu_and_say_why() {
        let list = [inst("m_0", Placement::Gpu(0), false)];
        let machine = Machine {
            cuda: vec![],
            why_not: "no CUDA driver".into(),
        };
        let (devices, notes) = place(&list, None, Device::Cpu, &machine);
        assert_eq!(devices, [Device::Cpu]);
        assert!(
            notes[0].contains("no usable CUDA device: no CUDA driver"),
            "{notes:?}"
        );
    }

    #[test]
    fn an_explicit_device_wins_and_cpu_only_models_keep_the_automatic_one() {
        let list = [
            inst("m_0", Placement::Gpu(0), false),
            inst("m_1", Placement::Cpu, false),
        ];
        let (devices, notes) = place(
            &list,
            Some(Device::Cpu),
            Device::Cuda(0),
            &Machine::default(),
        );
        assert_eq!(devices, [Device::Cpu, Device::Cpu]);
        assert!(notes[0].contains("m_0 (gpu:0) run on cpu"), "{notes:?}");
        let cpu_only = [
            inst("m_0", Placement::Cpu, false),
            inst("m_1", Placement::Cpu, false),
        ];
        let (devices, notes) = place(&cpu_only, None, Device::Cuda(0), &Machine::default());
        assert_eq!(devices, [Device::Cuda(0), Device::Cuda(0)]);
        assert!(notes.is_empty());
    }
}
