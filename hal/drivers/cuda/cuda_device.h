// The CUDA driver: CreateDevice("cuda") / ("cuda:N") lands here (see README.md).
//
// libcuda.so.1 is dlopened at run time; without it (or without a GPU) CreateCudaDevice returns
// Unavailable with the reason. A device owns one non-blocking CUDA stream (its in-order queue)
// on the GPU's primary context, the GPU's default stream-ordered memory pool, a pinned staging
// buffer for host transfers, and two host threads: one that retires submissions in stream
// order (waits for their CUDA events, then signals semaphores / releases them; host waits
// retire reached submissions themselves first), one that holds back submissions waiting for a
// semaphore no queued GPU work will signal. A submission whose waits are satisfied is launched
// on the calling thread.
//
// Beyond the HAL API this header gives CUDA-only counters, command-buffer modes and a graph
// description for tests, tools and the benchmark.
// Thread-safety: every function is thread-safe.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "hal/command_buffer.h"
#include "hal/device.h"
#include "hal/drivers/cuda/cuda_command_buffer.h"
#include "hal/drivers/cuda/cuda_graph_command_buffer.h"

namespace hexir::hal::cuda {

// Unavailable: no libcuda.so.1 / cuInit failed / no GPU. InvalidArgument: ordinal out of range
// (the message names the device count).
StatusOr<vm::Ref<Device>> CreateCudaDevice(int ordinal, const DeviceOptions& options);

// How many CUDA GPUs this process can see (without creating devices): Unavailable as for
// CreateCudaDevice when there is no driver or no GPU.
StatusOr<int> DeviceCount();

// What Device::CreateCommandBuffer returns on CUDA: kGraph, unless the environment variable
// HEXIR_CUDA_COMMAND_BUFFERS=stream (read once per process) selects kStream. The library, the
// HAL module and the tools all go through CreateCommandBuffer, so they share this default.
CommandBufferMode DefaultCommandBufferMode();

// A command buffer of an explicit mode (kStream: direct launches, for one-shot work).
StatusOr<vm::Ref<CommandBuffer>> CreateCommandBuffer(Device& device, CommandBufferMode mode);

// CUDA-only counters of one device (cumulative since creation).
struct CudaStats {
  uint64_t module_loads = 0;          // cuModuleLoadData calls (a PTX fallback counts as a 2nd)
  uint64_t graph_instantiations = 0;  // cuGraphInstantiate calls
  uint64_t graph_launches = 0;        // cuGraphLaunch calls
  uint64_t kernel_node_updates = 0;   // cuGraphExecKernelNodeSetParams calls
  // Nodes and edges of the graphs built at Finalize (top level; a WHILE body or a collective's
  // captured graph counts as its one node): what a recording's barriers became.
  uint64_t graph_nodes = 0;
  uint64_t graph_edges = 0;
  // Of graph_edges and of the edges inside WHILE bodies: kernel->kernel edges made
  // programmatic (PDL: the next kernel launches while this one runs and waits in its entry;
  // HEXIR_CUDA_PDL, README.md "Programmatic dependent launch").
  uint64_t programmatic_edges = 0;
  uint64_t stream_launches = 0;       // cuLaunchKernel calls (stream command buffers)
  // Times a host call blocked on the GPU: Semaphore::Wait and WaitIdle (DeviceStats::host_waits)
  // plus ReadBuffer/WriteBuffer of device memory (each waits for its staging copy).
  uint64_t host_synchronizations = 0;
  // Semaphore waits of the compute stream or the transfer stream on work of another CUDA queue
  // (a transfer stream, another device's stream) ordered on the GPU with cuStreamWaitEvent,
  // and submissions held back on the host instead (their
  // waits are signalled by nothing on a GPU stream yet: the host, or held-back work).
  uint64_t waits_on_device = 0;
  uint64_t submissions_held_back = 0;
  // Copies from another CUDA device issued as cuMemcpyPeerAsync (two GPUs with peer access, or
  // two logical devices of one GPU under HEXIR_CUDA_PEER_COPY=force: cuda_peer_link.h); the
  // device-to-device copies between logical devices of one GPU are not counted here (both
  // count DeviceStats::transfers_peer).
  uint64_t peer_copies = 0;
  // Argument readiness awaited per command (cuda_argument_gate.h): commands of a submission's
  // first execution whose argument's write was not issued yet when the command was reached,
  // so the launching thread waited on the host until it was (then cuStreamWaitEvent on it).
  uint64_t argument_issue_waits = 0;
};
// InvalidArgument when `device` is not a CUDA device.
StatusOr<CudaStats> GetCudaStats(const Device& device);

// Node/edge counts of a finalized graph-mode CUDA command buffer.
StatusOr<GraphInfo> DescribeGraph(const CommandBuffer& command_buffer);

}  // namespace hexir::hal::cuda
