//! Devices: where a tensor's memory lives, and whether the CPU can read it.
//!
//! Vocabulary: imports nothing of the crate.

use std::fmt;

/// The kind of device a tensor lives on (`DLDeviceType` in `dlpack.h`).
///
/// A newtype over the C enum's integer, never a Rust enum: a producer may send a value this
/// crate does not know (a newer DLPack minor version), and reading it must not be undefined
/// behaviour. Unknown values are kept and reported by number.
///
/// ```
/// use dlbridge::DeviceType;
/// assert_eq!(DeviceType::CUDA_HOST.name(), Some("CUDAHost"));
/// assert!(DeviceType::CUDA_MANAGED.is_host_readable());
/// assert!(!DeviceType::CUDA.is_host_readable());
/// assert!(DeviceType::TPU_HOST.is_host_readable()); // JAX's TPU pinned host memory
/// assert_eq!(DeviceType(22).to_string(), "DeviceType(22)");
/// ```
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceType(pub i32);

impl DeviceType {
    /// `kDLCPU`: host memory.
    pub const CPU: DeviceType = DeviceType(1);
    /// `kDLCUDA`: CUDA device memory.
    pub const CUDA: DeviceType = DeviceType(2);
    /// `kDLCUDAHost`: pinned host memory from `cudaMallocHost`.
    pub const CUDA_HOST: DeviceType = DeviceType(3);
    /// `kDLOpenCL`: OpenCL device memory.
    pub const OPENCL: DeviceType = DeviceType(4);
    /// `kDLVulkan`: a Vulkan buffer.
    pub const VULKAN: DeviceType = DeviceType(7);
    /// `kDLMetal`: Metal memory on Apple GPUs. DLPack's main branch documents `DLTensor::data`
    /// for it as an `id<MTLBuffer>` (dmlc/dlpack#186), a handle rather than an address, which
    /// `byte_offset` then offsets into.
    pub const METAL: DeviceType = DeviceType(8);
    /// `kDLVPI`: a Verilog simulator buffer.
    pub const VPI: DeviceType = DeviceType(9);
    /// `kDLROCM`: ROCm device memory on AMD GPUs.
    pub const ROCM: DeviceType = DeviceType(10);
    /// `kDLROCMHost`: pinned host memory from `hipMallocHost`.
    pub const ROCM_HOST: DeviceType = DeviceType(11);
    /// `kDLExtDev`: reserved extension device; its meaning is up to the implementation.
    pub const EXT_DEV: DeviceType = DeviceType(12);
    /// `kDLCUDAManaged`: CUDA managed (unified) memory from `cudaMallocManaged`.
    pub const CUDA_MANAGED: DeviceType = DeviceType(13);
    /// `kDLOneAPI`: unified shared memory on a oneAPI device.
    pub const ONE_API: DeviceType = DeviceType(14);
    /// `kDLWebGPU`: WebGPU memory.
    pub const WEBGPU: DeviceType = DeviceType(15);
    /// `kDLHexagon`: Qualcomm Hexagon DSP memory.
    pub const HEXAGON: DeviceType = DeviceType(16);
    /// `kDLMAIA`: Microsoft MAIA device memory.
    pub const MAIA: DeviceType = DeviceType(17);
    /// `kDLTrn`: AWS Trainium device memory.
    pub const TRN: DeviceType = DeviceType(18);
    /// `kDLTPU`: Google TPU device memory. Added after the 1.3 tag, on DLPack's main branch
    /// (dmlc/dlpack#188).
    pub const TPU: DeviceType = DeviceType(19);
    /// `kDLTPUHost`: host memory pinned for a TPU runtime (JAX's `pinned_host` memory kind), as
    /// `kDLCUDAHost` is for CUDA: the CPU reads it. Added with [`DeviceType::TPU`]
    /// (dmlc/dlpack#188).
    pub const TPU_HOST: DeviceType = DeviceType(20);
    /// `kDLAscend`: Huawei Ascend NPU device memory. Added after the 1.3 tag, on DLPack's main
    /// branch (dmlc/dlpack#189).
    pub const ASCEND: DeviceType = DeviceType(21);

    /// Every device type named in `dlpack.h` 1.3 and on DLPack's main branch after it
    /// ([`DeviceType::TPU`], [`DeviceType::TPU_HOST`], [`DeviceType::ASCEND`]), in value order.
    pub const ALL: [DeviceType; 19] = [
        Self::CPU,
        Self::CUDA,
        Self::CUDA_HOST,
        Self::OPENCL,
        Self::VULKAN,
        Self::METAL,
        Self::VPI,
        Self::ROCM,
        Self::ROCM_HOST,
        Self::EXT_DEV,
        Self::CUDA_MANAGED,
        Self::ONE_API,
        Self::WEBGPU,
        Self::HEXAGON,
        Self::MAIA,
        Self::TRN,
        Self::TPU,
        Self::TPU_HOST,
        Self::ASCEND,
    ];

    /// The name used by `dlpack.h` without its `kDL` prefix (`"CPU"`, `"CUDAHost"`), or `None`
    /// for a value the header does not define.
    pub const fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            1 => "CPU",
            2 => "CUDA",
            3 => "CUDAHost",
            4 => "OpenCL",
            7 => "Vulkan",
            8 => "Metal",
            9 => "VPI",
            10 => "ROCM",
            11 => "ROCMHost",
            12 => "ExtDev",
            13 => "CUDAManaged",
            14 => "OneAPI",
            15 => "WebGPU",
            16 => "Hexagon",
            17 => "MAIA",
            18 => "Trn",
            19 => "TPU",
            20 => "TPUHost",
            21 => "Ascend",
            _ => return None,
        })
    }

    /// Whether the header defines this value.
    pub const fn is_known(self) -> bool {
        self.name().is_some()
    }

    /// Whether the CPU can read and write this memory directly: CPU, CUDAHost, ROCMHost,
    /// CUDAManaged and TPUHost. Typed element access is only offered for these.
    pub const fn is_host_readable(self) -> bool {
        matches!(self.0, 1 | 3 | 11 | 13 | 20)
    }
}

impl fmt::Debug for DeviceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "DeviceType::{name}"),
            None => write!(f, "DeviceType({})", self.0),
        }
    }
}

impl fmt::Display for DeviceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "DeviceType({})", self.0),
        }
    }
}

/// A device: its kind and its index among devices of that kind (`DLDevice` in `dlpack.h`).
///
/// ```
/// use dlbridge::{Device, DeviceType};
/// assert_eq!(Device::CPU.to_string(), "CPU:0");
/// assert_eq!(Device::new(DeviceType::CUDA, 1).to_string(), "CUDA:1");
/// ```
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Device {
    /// The kind of device.
    pub device_type: DeviceType,
    /// The device index; 0 for host, pinned and managed memory.
    pub device_id: i32,
}

impl Device {
    /// Host memory (`kDLCPU`, index 0).
    pub const CPU: Device = Device::new(DeviceType::CPU, 0);

    /// A device from its kind and index.
    pub const fn new(device_type: DeviceType, device_id: i32) -> Self {
        Device {
            device_type,
            device_id,
        }
    }

    /// Whether the CPU can access this device's memory directly (see
    /// [`DeviceType::is_host_readable`]).
    pub const fn is_host_readable(self) -> bool {
        self.device_type.is_host_readable()
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.device_type, self.device_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_header_value_has_a_distinct_name() {
        let mut names: Vec<_> = DeviceType::ALL.iter().map(|d| d.name().unwrap()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), DeviceType::ALL.len());
        assert!(DeviceType::ALL.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn host_readable_devices_are_exactly_the_five_host_memories() {
        let readable: Vec<_> = DeviceType::ALL
            .iter()
            .copied()
            .filter(|d| d.is_host_readable())
            .collect();
        assert_eq!(
            readable,
            [
                DeviceType::CPU,
                DeviceType::CUDA_HOST,
                DeviceType::ROCM_HOST,
                DeviceType::CUDA_MANAGED,
                DeviceType::TPU_HOST,
            ]
        );
    }

    #[test]
    fn unknown_values_are_kept_and_printed_by_number() {
        for raw in [0, 5, 6, 22, 23, -1, i32::MAX] {
            let d = DeviceType(raw);
            assert!(!d.is_known());
            assert!(!d.is_host_readable());
            assert_eq!(d.to_string(), format!("DeviceType({raw})"));
            assert_eq!(format!("{d:?}"), format!("DeviceType({raw})"));
        }
        assert_eq!(
            format!("{:?}", DeviceType::ROCM_HOST),
            "DeviceType::ROCMHost"
        );
    }

    #[test]
    fn the_values_after_1_3_have_their_header_names() {
        // dmlc/dlpack#188 and #189, on DLPack's main branch after the 1.3 tag.
        let named: Vec<_> = [DeviceType(19), DeviceType(20), DeviceType(21)]
            .iter()
            .map(|d| d.to_string())
            .collect();
        assert_eq!(named, ["TPU", "TPUHost", "Ascend"]);
        assert!(!DeviceType::TPU.is_host_readable() && !DeviceType::ASCEND.is_host_readable());
    }
}
