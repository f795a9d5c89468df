// uvm-link-bench: what a row costs on the host link when FBGEMM's UVM caching moves it (#46).
//
// TorchRec's fused_uvm_caching keeps a table in host memory that FBGEMM allocates as "managed" memory pinned to the
// CPU side and mapped into the GPU (new_managed_tensor: cudaMallocManaged, then cudaMemAdvise PreferredLocation=CPU
// and AccessedBy=GPU), so GPU kernels read and write it over PCIe without page faults. A cache miss moves one row
// host->GPU (and an evicted dirty row GPU->host); a conflict miss reads the row from UVM in forward and reads and
// writes it in backward. The planner's cost model needs the link's effective bandwidth and per-row cost for exactly
// these random row accesses, which differ from the link's streaming figure (small rows waste TLP headers, random
// pages miss the GPU's TLB). This program measures them, with plain pinned memcpy as the link's ceiling, zero-copy
// mapped host memory as a second host-resident layout and HBM as what a cache hit costs.
//
//   uvm_link_bench OUT.json [--quick] [--device N] [--max-seconds S] [--table-mib M]
//
// Writes one JSON document to OUT.json (rewritten after every case, so a run cut short still leaves its results;
// "complete" says whether it finished), progress and a summary to stderr. Exit 1 on any CUDA error or when there is
// no usable GPU, 2 on bad usage. tools/uvm-link-bench/README.md describes the output.

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace {

// ---------------------------------------------------------------------------------------------------------------
// Errors: every failure ends the run with one line that says what failed, so a device run that stops is diagnosable
// from its log alone.

[[noreturn]] void die(const char* fmt, ...) {
  std::fprintf(stderr, "uvm-link-bench: error: ");
  va_list args;
  va_start(args, fmt);
  std::vfprintf(stderr, fmt, args);
  va_end(args);
  std::fprintf(stderr, "\n");
  std::exit(1);
}

void check_cuda(cudaError_t err, const char* call, const char* file, int line) {
  if (err != cudaSuccess) {
    die("%s failed (%s:%d): %s: %s", call, file, line, cudaGetErrorName(err), cudaGetErrorString(err));
  }
}

#define CUDA_CHECK(call) check_cuda((call), #call, __FILE__, __LINE__)
// A launch reports a bad configuration only through cudaGetLastError; faults inside the kernel surface at the next
// synchronisation, which is checked too.
#define CUDA_CHECK_LAUNCH() check_cuda(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)

// ---------------------------------------------------------------------------------------------------------------
// Settings.

constexpr int kWarmups = 3;
constexpr int kReps = 10;
constexpr int kMinRepsWhenLate = 3;  // past the deadline a case still keeps this many timings
// Id slices: one per launch, and one more so that duplex writes other rows than it reads.
constexpr int kSlices = kWarmups + kReps + 1;
constexpr int kBlockThreads = 256;
constexpr uint64_t kSeed = 46;  // the issue's number; any fixed value keeps runs comparable
constexpr size_t kMemcpyBytes = size_t{256} << 20;

struct DimConfig {
  const char* dtype;
  int elem_bytes;
  int dim;
};

struct Options {
  std::string out_path;
  int device = 0;
  double max_seconds = 110;  // run.sh's whole budget is 4 minutes; compilation and probes take the rest
  bool quick = false;
  size_t table_bytes = size_t{4} << 30;
  std::vector<DimConfig> dims;
  std::vector<int64_t> row_counts;
};

[[noreturn]] void usage_error(const char* fmt, const char* arg) {
  std::fprintf(stderr, "uvm-link-bench: ");
  std::fprintf(stderr, fmt, arg);
  std::fprintf(stderr,
               "\nusage: uvm_link_bench OUT.json [--quick] [--device N] [--max-seconds S] [--table-mib M]\n"
               "  --quick        two widths and 1e4/1e5 rows on a 1 GiB table: a smoke test, not figures\n"
               "  --max-seconds  stop starting new cases after S seconds (default 110)\n");
  std::exit(2);
}

double parse_number(const char* flag, const char* text, double least) {
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(value >= least)) {
    usage_error(least > 0 ? "%s: expected a positive number" : "%s: expected a non-negative number", flag);
  }
  return value;
}

Options parse_options(int argc, char** argv) {
  Options o;
  bool table_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage_error("%s needs a value", argv[i]);
      return argv[++i];
    };
    if (arg == "--quick") {
      o.quick = true;
    } else if (arg == "--device") {
      o.device = static_cast<int>(parse_number("--device", value(), 0));
    } else if (arg == "--max-seconds") {
      o.max_seconds = parse_number("--max-seconds", value(), 1);
    } else if (arg == "--table-mib") {
      o.table_bytes = static_cast<size_t>(parse_number("--table-mib", value(), 1)) << 20;
      table_given = true;
    } else if (!arg.empty() && arg[0] == '-') {
      usage_error("unknown option %s", arg.c_str());
    } else if (o.out_path.empty()) {
      o.out_path = arg;
    } else {
      usage_error("unexpected argument %s", arg.c_str());
    }
  }
  if (o.out_path.empty()) usage_error("%s", "missing the output path");
  if (o.quick) {
    o.dims = {{"fp32", 4, 32}, {"fp32", 4, 128}};
    o.row_counts = {10000, 100000};
    if (!table_given) o.table_bytes = size_t{1} << 30;
  } else {
    // fp16 at d=128 moves the same 256-byte rows as fp32 at d=64; it is measured anyway so the cost model can look
    // it up by (dtype, dim) without assuming bytes are all that matter.
    o.dims = {{"fp32", 4, 16}, {"fp32", 4, 32}, {"fp32", 4, 64}, {"fp32", 4, 128}, {"fp32", 4, 256}, {"fp16", 2, 128}};
    o.row_counts = {10000, 100000, 1000000};
  }
  return o;
}

// ---------------------------------------------------------------------------------------------------------------
// Kernels. A row is moved by a group of lanes sized to it (up to a warp), each lane moving 4-, 8- or 16-byte
// vectors, so a row's bytes go out as few coalesced requests as the hardware allows, as FBGEMM's cache kernels do.
// Grid-stride loops let the duplex case cap each kernel's grid at half the GPU, so the read and the write kernels
// are resident together instead of one waiting for the other's blocks to drain.

template <typename Vec>
__global__ void __launch_bounds__(kBlockThreads)
    gather_rows(const Vec* __restrict__ table, const int64_t* __restrict__ ids, Vec* __restrict__ out, int64_t rows,
                int row_vecs, int lane_shift) {
  const int64_t thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int lanes = 1 << lane_shift;
  const int lane = static_cast<int>(thread & (lanes - 1));
  const int64_t stride = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> lane_shift;
  for (int64_t row = thread >> lane_shift; row < rows; row += stride) {
    const Vec* src = table + ids[row] * row_vecs;
    Vec* dst = out + row * row_vecs;
#pragma unroll 4
    for (int v = lane; v < row_vecs; v += lanes) dst[v] = src[v];
  }
}

template <typename Vec>
__global__ void __launch_bounds__(kBlockThreads)
    scatter_rows(Vec* __restrict__ table, const int64_t* __restrict__ ids, const Vec* __restrict__ in, int64_t rows,
                 int row_vecs, int lane_shift) {
  const int64_t thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int lanes = 1 << lane_shift;
  const int lane = static_cast<int>(thread & (lanes - 1));
  const int64_t stride = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> lane_shift;
  for (int64_t row = thread >> lane_shift; row < rows; row += stride) {
    Vec* dst = table + ids[row] * row_vecs;
    const Vec* src = in + row * row_vecs;
#pragma unroll 4
    for (int v = lane; v < row_vecs; v += lanes) dst[v] = src[v];
  }
}

// Writes the whole table from the GPU, as TorchRec's initialisation of a UVM table does; its time is reported
// (a table whose pages are not yet mapped into the GPU pays for faults here, not in the timed cases).
__global__ void fill_table(uint4* table, size_t vecs) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < vecs; i += stride) {
    const uint32_t x = static_cast<uint32_t>(i) * 2654435761u;
    table[i] = make_uint4(x, x ^ 1u, x ^ 2u, x ^ 3u);
  }
}

// Reads one word of every 4 KiB page: cheap when every page is already mapped into the GPU, slow when faults are
// still being taken, so its time tells which.
__global__ void touch_pages(const uint32_t* table, size_t words, uint32_t* sink) {
  constexpr size_t kWordsPerPage = 4096 / sizeof(uint32_t);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x * kWordsPerPage;
  for (size_t i = (static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kWordsPerPage; i < words;
       i += stride) {
    if (table[i] == 0xffffffffu) *sink = static_cast<uint32_t>(i);  // a use the compiler cannot drop
  }
}

// ---------------------------------------------------------------------------------------------------------------
// JSON: a small writer is enough for one flat document and keeps the tool free of dependencies.

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string json_int(int64_t v) { return std::to_string(v); }

// An object built field by field; values are already-encoded JSON text.
class JsonObject {
 public:
  JsonObject& add(const std::string& key, const std::string& encoded) {
    fields_.push_back(json_string(key) + ": " + encoded);
    return *this;
  }
  JsonObject& str(const std::string& key, const std::string& v) { return add(key, json_string(v)); }
  JsonObject& num(const std::string& key, double v) { return add(key, json_number(v)); }
  JsonObject& integer(const std::string& key, int64_t v) { return add(key, json_int(v)); }
  JsonObject& boolean(const std::string& key, bool v) { return add(key, v ? "true" : "false"); }
  std::string text() const {
    std::string out = "{";
    for (size_t i = 0; i < fields_.size(); ++i) out += (i ? ", " : "") + fields_[i];
    return out + "}";
  }

 private:
  std::vector<std::string> fields_;
};

std::string json_array(const std::vector<std::string>& items, const std::string& indent) {
  if (items.empty()) return "[]";
  std::string out = "[\n";
  for (size_t i = 0; i < items.size(); ++i) out += indent + "  " + items[i] + (i + 1 < items.size() ? ",\n" : "\n");
  return out + indent + "]";
}

// ---------------------------------------------------------------------------------------------------------------
// Machine description: enough to tell which link a figure belongs to.

std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (in) std::getline(in, line);
  return line;
}

// "32.0 GT/s PCIe" -> 5: each PCIe generation doubles the transfer rate from Gen1's 2.5 GT/s (Gen3 onwards changed
// the encoding, not this ladder).
int pcie_gen_of_speed(const std::string& speed) {
  const double gts = std::atof(speed.c_str());
  if (gts <= 0) return 0;
  return 1 + static_cast<int>(std::lround(std::log2(gts / 2.5)));
}

// The PCIe links from the root port down to the GPU, from sysfs: a switch between the GPU and the CPU (HGX boards)
// can have an uplink narrower or slower than the GPU's own link, and the uplink is what host traffic crosses.
std::string pcie_path_json(const std::string& bus_id) {
  std::string lower = bus_id;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  char resolved[PATH_MAX];
  if (!realpath(("/sys/bus/pci/devices/" + lower).c_str(), resolved)) return "[]";
  const std::string path = resolved;
  std::vector<std::string> hops;
  for (size_t slash = path.find('/', std::strlen("/sys/devices/")); slash != std::string::npos;) {
    const size_t next = path.find('/', slash + 1);
    const std::string dir = path.substr(0, next);
    const std::string speed = read_first_line(dir + "/current_link_speed");
    if (!speed.empty()) {
      hops.push_back(JsonObject()
                         .str("bdf", dir.substr(dir.rfind('/') + 1))
                         .str("current_link_speed", speed)
                         .integer("current_gen", pcie_gen_of_speed(speed))
                         .str("current_link_width", read_first_line(dir + "/current_link_width"))
                         .str("max_link_speed", read_first_line(dir + "/max_link_speed"))
                         .str("max_link_width", read_first_line(dir + "/max_link_width"))
                         .text());
    }
    slash = next;
  }
  return json_array(hops, "    ");
}

// NVML, opened at run time so the build needs no NVML headers or link flags and a machine without it still runs.
// The current link generation is read while a transfer is in flight, because an idle GPU trains its link down.
class Nvml {
 public:
  explicit Nvml(const std::string& bus_id) {
    lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib_) return;
    using InitFn = int (*)();
    using HandleFn = int (*)(const char*, void**);
    auto init = reinterpret_cast<InitFn>(dlsym(lib_, "nvmlInit_v2"));
    auto handle = reinterpret_cast<HandleFn>(dlsym(lib_, "nvmlDeviceGetHandleByPciBusId_v2"));
    if (!init || !handle || init() != 0) return;
    initialised_ = true;
    if (handle(bus_id.c_str(), &device_) != 0) device_ = nullptr;
  }
  ~Nvml() {
    if (initialised_) {
      auto shutdown = reinterpret_cast<int (*)()>(dlsym(lib_, "nvmlShutdown"));
      if (shutdown) shutdown();
    }
    if (lib_) dlclose(lib_);
  }
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  // -1 when NVML or the query is missing.
  int query(const char* name) const {
    if (!device_) return -1;
    auto fn = reinterpret_cast<int (*)(void*, unsigned*)>(dlsym(lib_, name));
    unsigned value = 0;
    if (!fn || fn(device_, &value) != 0) return -1;
    return static_cast<int>(value);
  }

  std::string link_json() const {
    auto field = [&](const char* name) {
      const int v = query(name);
      return v < 0 ? std::string("null") : json_int(v);
    };
    return JsonObject()
        .add("current_gen", field("nvmlDeviceGetCurrPcieLinkGeneration"))
        .add("current_width", field("nvmlDeviceGetCurrPcieLinkWidth"))
        .add("max_gen", field("nvmlDeviceGetMaxPcieLinkGeneration"))
        .add("gpu_max_gen", field("nvmlDeviceGetGpuMaxPcieLinkGeneration"))
        .add("max_width", field("nvmlDeviceGetMaxPcieLinkWidth"))
        .text();
  }

 private:
  void* lib_ = nullptr;
  void* device_ = nullptr;
  bool initialised_ = false;
};

int current_numa_node() {
  const int cpu = sched_getcpu();
  if (cpu < 0) return -1;
  const std::string cpu_dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/node";
  for (int node = 0; node < 64; ++node) {
    if (access((cpu_dir + std::to_string(node)).c_str(), F_OK) == 0) return node;
  }
  return -1;
}

// ---------------------------------------------------------------------------------------------------------------
// Managed memory the way FBGEMM's new_managed_tensor sets it up. CUDA 13 replaced the device-number argument of
// cudaMemAdvise and cudaMemPrefetchAsync with a cudaMemLocation, as FBGEMM's own code has to handle too.

void mem_advise(void* ptr, size_t bytes, cudaMemoryAdvise advice, bool host, int device) {
#if CUDART_VERSION >= 13000
  cudaMemLocation where{};
  where.type = host ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
  where.id = host ? cudaCpuDeviceId : device;
  CUDA_CHECK(cudaMemAdvise(ptr, bytes, advice, where));
#else
  CUDA_CHECK(cudaMemAdvise(ptr, bytes, advice, host ? cudaCpuDeviceId : device));
#endif
}

void prefetch_to_host(void* ptr, size_t bytes, cudaStream_t stream) {
#if CUDART_VERSION >= 13000
  cudaMemLocation where{};
  where.type = cudaMemLocationTypeHost;
  where.id = cudaCpuDeviceId;
  CUDA_CHECK(cudaMemPrefetchAsync(ptr, bytes, where, 0, stream));
#else
  CUDA_CHECK(cudaMemPrefetchAsync(ptr, bytes, cudaCpuDeviceId, stream));
#endif
}

// ---------------------------------------------------------------------------------------------------------------
// Random row ids: a fixed-seed uniform draw, made on the host (so it does not depend on the GPU's RNG) and kept on
// the device for the whole run. Every launch of a case gets its own slice, so no launch finds the previous one's
// rows in the GPU's L2 or TLB, as a cache miss would not.

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

int64_t* make_id_pool(int64_t table_rows, int64_t slice_rows) {
  std::vector<int64_t> ids(static_cast<size_t>(slice_rows) * kSlices);
  uint64_t state = kSeed ^ (static_cast<uint64_t>(table_rows) << 20);
  for (int64_t& id : ids) {
    // Multiply-shift maps 64 random bits onto [0, table_rows) with a bias below 2^-30 for these sizes.
    id = static_cast<int64_t>((static_cast<unsigned __int128>(splitmix64(state)) * table_rows) >> 64);
  }
  int64_t* device_ids = nullptr;
  CUDA_CHECK(cudaMalloc(&device_ids, ids.size() * sizeof(int64_t)));
  CUDA_CHECK(cudaMemcpy(device_ids, ids.data(), ids.size() * sizeof(int64_t), cudaMemcpyHostToDevice));
  return device_ids;
}

// ---------------------------------------------------------------------------------------------------------------
// Timing.

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Samples {
  std::vector<double> total_ms;  // start of the first stream's work to the end of both
  std::vector<double> side_ms;   // start to the end of the second stream's work (duplex only)
  std::vector<double> main_ms;   // start to the end of the first stream's work (duplex only)
  bool truncated = false;
};

// How a row kernel is launched (Bench::shape says why).
struct LaunchShape {
  int vec_bytes;
  int row_vecs;
  int lane_shift;
  int blocks;
};

class Bench {
 public:
  Bench(const Options& options, int device) : options_(options), start_time_(Clock::now()) {
    CUDA_CHECK(cudaStreamCreateWithFlags(&s0_, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&s1_, cudaStreamNonBlocking));
    for (cudaEvent_t* e : {&start_, &stop_, &end0_, &end1_}) CUDA_CHECK(cudaEventCreate(e));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, device));
    int l2 = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    // Writing several times the L2's size between launches evicts whatever the previous launch left there.
    flush_bytes_ = std::max<size_t>(size_t{4} * l2, size_t{64} << 20);
    CUDA_CHECK(cudaMalloc(&flush_, flush_bytes_));
  }
  ~Bench() {
    cudaFree(flush_);
    for (cudaEvent_t e : {start_, stop_, end0_, end1_}) cudaEventDestroy(e);
    cudaStreamDestroy(s0_);
    cudaStreamDestroy(s1_);
  }
  Bench(const Bench&) = delete;
  Bench& operator=(const Bench&) = delete;

  cudaStream_t s0() const { return s0_; }
  cudaStream_t s1() const { return s1_; }
  int sms() const { return sms_; }
  size_t flush_bytes() const { return flush_bytes_; }
  double elapsed_s() const { return std::chrono::duration<double>(Clock::now() - start_time_).count(); }
  bool late() const { return elapsed_s() > options_.max_seconds; }

  // Runs kWarmups + kReps launches, each after an L2 flush and on its own id slice (`slice` = launch number).
  // `main` enqueues on s0; `side`, when given, on s1 concurrently, both inside the same pair of events.
  Samples time(const std::function<void(int slice)>& main, const std::function<void(int slice)>& side = nullptr) {
    Samples out;
    for (int launch = 0; launch < kWarmups + kReps; ++launch) {
      if (late() && launch >= kWarmups + kMinRepsWhenLate) {
        out.truncated = true;
        break;
      }
      CUDA_CHECK(cudaMemsetAsync(flush_, launch & 0xff, flush_bytes_, s0_));
      CUDA_CHECK(cudaEventRecord(start_, s0_));
      if (side) CUDA_CHECK(cudaStreamWaitEvent(s1_, start_, 0));
      main(launch);
      if (side) {
        CUDA_CHECK(cudaEventRecord(end0_, s0_));
        side(launch);
        CUDA_CHECK(cudaEventRecord(end1_, s1_));
        CUDA_CHECK(cudaStreamWaitEvent(s0_, end1_, 0));
      }
      CUDA_CHECK(cudaEventRecord(stop_, s0_));
      CUDA_CHECK(cudaEventSynchronize(stop_));
      if (launch < kWarmups) continue;
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
      out.total_ms.push_back(ms);
      if (side) {
        CUDA_CHECK(cudaEventElapsedTime(&ms, start_, end0_));
        out.main_ms.push_back(ms);
        CUDA_CHECK(cudaEventElapsedTime(&ms, start_, end1_));
        out.side_ms.push_back(ms);
      }
    }
    return out;
  }

  // How to launch a row kernel for rows of `row_bytes`: the widest vector that divides the row, a group of lanes
  // no wider than the row (up to a warp), and a grid no larger than the GPU holds at once (half of it for duplex).
  template <typename Kernel>
  LaunchShape shape(Kernel kernel, int vec_bytes, int64_t row_bytes, int64_t rows, bool half_gpu) const {
    LaunchShape s{};
    s.vec_bytes = vec_bytes;
    s.row_vecs = static_cast<int>(row_bytes / vec_bytes);
    s.lane_shift = 0;
    while (s.lane_shift < 5 && (2 << s.lane_shift) <= s.row_vecs) ++s.lane_shift;
    int per_sm = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kBlockThreads, 0));
    int64_t resident = static_cast<int64_t>(std::max(per_sm, 1)) * sms_;
    if (half_gpu) resident = std::max<int64_t>(resident / 2, 1);
    const int64_t needed = (rows * (int64_t{1} << s.lane_shift) + kBlockThreads - 1) / kBlockThreads;
    s.blocks = static_cast<int>(std::max<int64_t>(1, std::min(needed, resident)));
    return s;
  }

 private:
  const Options& options_;
  Clock::time_point start_time_;
  cudaStream_t s0_{}, s1_{};
  cudaEvent_t start_{}, stop_{}, end0_{}, end1_{};
  int sms_ = 0;
  size_t flush_bytes_ = 0;
  void* flush_ = nullptr;
};

// Launches gather (table -> out) or scatter (in -> table) with the vector type `row_bytes` allows.
enum class Direction { kGather, kScatter };

template <typename Vec>
void launch_rows(Direction dir, const LaunchShape& s, void* table, const int64_t* ids, void* buffer, int64_t rows,
                 cudaStream_t stream) {
  if (dir == Direction::kGather) {
    gather_rows<Vec><<<s.blocks, kBlockThreads, 0, stream>>>(static_cast<const Vec*>(table), ids,
                                                             static_cast<Vec*>(buffer), rows, s.row_vecs, s.lane_shift);
  } else {
    scatter_rows<Vec><<<s.blocks, kBlockThreads, 0, stream>>>(
        static_cast<Vec*>(table), ids, static_cast<const Vec*>(buffer), rows, s.row_vecs, s.lane_shift);
  }
  CUDA_CHECK_LAUNCH();
}

int vec_bytes_for(int64_t row_bytes) { return row_bytes % 16 == 0 ? 16 : row_bytes % 8 == 0 ? 8 : 4; }

LaunchShape row_shape(const Bench& bench, Direction dir, int64_t row_bytes, int64_t rows, bool half_gpu) {
  const int vec = vec_bytes_for(row_bytes);
  const bool g = dir == Direction::kGather;
  switch (vec) {
    case 16:
      return g ? bench.shape(gather_rows<uint4>, vec, row_bytes, rows, half_gpu)
               : bench.shape(scatter_rows<uint4>, vec, row_bytes, rows, half_gpu);
    case 8:
      return g ? bench.shape(gather_rows<uint2>, vec, row_bytes, rows, half_gpu)
               : bench.shape(scatter_rows<uint2>, vec, row_bytes, rows, half_gpu);
    default:
      return g ? bench.shape(gather_rows<uint32_t>, vec, row_bytes, rows, half_gpu)
               : bench.shape(scatter_rows<uint32_t>, vec, row_bytes, rows, half_gpu);
  }
}

void launch_row_kernel(Direction dir, const LaunchShape& s, void* table, const int64_t* ids, void* buffer, int64_t rows,
                       cudaStream_t stream) {
  switch (s.vec_bytes) {
    case 16:
      return launch_rows<uint4>(dir, s, table, ids, buffer, rows, stream);
    case 8:
      return launch_rows<uint2>(dir, s, table, ids, buffer, rows, stream);
    default:
      return launch_rows<uint32_t>(dir, s, table, ids, buffer, rows, stream);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Results.

struct Case {
  Case(std::string kind_, std::string memory_, std::string dtype_ = "", int dim_ = 0, int64_t row_bytes_ = 0,
       int64_t rows_ = 0)
      : kind(std::move(kind_)),
        memory(std::move(memory_)),
        dtype(std::move(dtype_)),
        dim(dim_),
        row_bytes(row_bytes_),
        rows(rows_) {}

  std::string kind;    // gather, scatter, duplex, memcpy_h2d, memcpy_d2h, memcpy_duplex
  std::string memory;  // managed, host_mapped, hbm, pinned
  std::string dtype;   // empty for memcpy
  int dim;
  int64_t row_bytes;
  int64_t rows;
  int64_t payload_bytes = 0;  // bytes of rows moved (both directions for duplex); ids and HBM-side traffic excluded
  LaunchShape shape{};
  Samples samples;
  double median_ms = NAN;
  double gb_per_s = NAN;
  bool exceeds_ceiling = false;
};

double gbps(int64_t bytes, double ms) { return bytes / (ms * 1e-3) / 1e9; }

// A weighted least-squares line t = alpha + beta * rows through a case's row counts; weights 1/t^2 fit relative
// error, so the smallest launch (which carries the fixed cost) counts as much as the largest.
struct Fit {
  double alpha_ms = NAN, beta_ms = NAN, max_rel_residual = NAN;
};

Fit fit_line(const std::vector<std::pair<double, double>>& points) {
  Fit f;
  if (points.size() < 2) return f;
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& [x, y] : points) {
    const double w = 1 / (y * y);
    sw += w, sx += w * x, sy += w * y, sxx += w * x * x, sxy += w * x * y;
  }
  const double det = sw * sxx - sx * sx;
  if (det == 0) return f;
  f.beta_ms = (sw * sxy - sx * sy) / det;
  f.alpha_ms = (sy - f.beta_ms * sx) / sw;
  f.max_rel_residual = 0;
  for (const auto& [x, y] : points) {
    f.max_rel_residual = std::max(f.max_rel_residual, std::fabs(f.alpha_ms + f.beta_ms * x - y) / y);
  }
  return f;
}

struct Report {
  std::string meta_json;  // device, versions, settings: fixed before the first case
  std::string link_busy_json = "null";
  std::vector<std::string> init_json;
  std::vector<Case> cases;
  std::vector<std::string> skipped;
  double ceiling_h2d = NAN, ceiling_d2h = NAN, ceiling_duplex = NAN;
};

std::string case_json(const Case& c) {
  JsonObject o;
  o.str("kind", c.kind).str("memory", c.memory);
  if (c.dtype.empty()) {
    o.add("dtype", "null").add("dim", "null").add("row_bytes", "null").add("rows", "null");
  } else {
    o.str("dtype", c.dtype).integer("dim", c.dim).integer("row_bytes", c.row_bytes).integer("rows", c.rows);
  }
  o.integer("payload_bytes", c.payload_bytes)
      .num("median_ms", c.median_ms)
      .num("GB_per_s", c.gb_per_s)
      .num("min_ms",
           c.samples.total_ms.empty() ? NAN : *std::min_element(c.samples.total_ms.begin(), c.samples.total_ms.end()))
      .num("max_ms",
           c.samples.total_ms.empty() ? NAN : *std::max_element(c.samples.total_ms.begin(), c.samples.total_ms.end()))
      .integer("reps", static_cast<int64_t>(c.samples.total_ms.size()));
  if (!c.dtype.empty()) {
    o.num("ns_per_row", c.median_ms * 1e6 / c.rows)
        .integer("vec_bytes", c.shape.vec_bytes)
        .integer("lanes_per_row", int64_t{1} << c.shape.lane_shift)
        .integer("blocks", c.shape.blocks);
  }
  if (c.kind == "duplex" || c.kind == "memcpy_duplex") {
    // Each direction's own finish time inside the duplex window: if the link overlaps the directions, both are
    // close to their one-direction times; if it does not, one of them stretches.
    o.num("read_median_ms", median(c.samples.main_ms)).num("write_median_ms", median(c.samples.side_ms));
  }
  if (c.memory == "managed" || c.memory == "host_mapped") o.boolean("exceeds_memcpy_ceiling", c.exceeds_ceiling);
  if (c.samples.truncated) o.boolean("truncated", true);
  return o.text();
}

// One fit per (kind, memory, dtype, dim) over its row counts.
struct FitRow {
  const Case* first;
  size_t points;
  Fit fit;
  double marginal_gb_per_s;
};

std::vector<FitRow> fits_of(const Report& r) {
  std::vector<FitRow> out;
  std::vector<bool> done(r.cases.size(), false);
  for (size_t i = 0; i < r.cases.size(); ++i) {
    const Case& c = r.cases[i];
    if (done[i] || c.dtype.empty()) continue;
    std::vector<std::pair<double, double>> points;
    for (size_t j = i; j < r.cases.size(); ++j) {
      const Case& o = r.cases[j];
      if (o.kind == c.kind && o.memory == c.memory && o.dtype == c.dtype && o.dim == c.dim) {
        done[j] = true;
        if (std::isfinite(o.median_ms)) points.emplace_back(static_cast<double>(o.rows), o.median_ms);
      }
    }
    const Fit f = fit_line(points);
    if (!std::isfinite(f.beta_ms)) continue;
    const double bytes_per_row = static_cast<double>(c.payload_bytes) / c.rows;
    out.push_back({&c, points.size(), f, f.beta_ms > 0 ? bytes_per_row / (f.beta_ms * 1e-3) / 1e9 : NAN});
  }
  return out;
}

std::vector<std::string> fits_json(const Report& r) {
  std::vector<std::string> out;
  for (const FitRow& row : fits_of(r)) {
    out.push_back(JsonObject()
                      .str("kind", row.first->kind)
                      .str("memory", row.first->memory)
                      .str("dtype", row.first->dtype)
                      .integer("dim", row.first->dim)
                      .integer("points", static_cast<int64_t>(row.points))
                      .num("alpha_us", row.fit.alpha_ms * 1e3)
                      .num("beta_ns_per_row", row.fit.beta_ms * 1e6)
                      .num("GB_per_s_marginal", row.marginal_gb_per_s)
                      .num("max_rel_residual", row.fit.max_rel_residual)
                      .text());
  }
  return out;
}

// Rewritten after every case, through a temporary file, so the file on disk is always a whole document.
void write_report(const Options& o, const Report& r, bool complete, double elapsed_s) {
  std::vector<std::string> cases;
  for (const Case& c : r.cases) cases.push_back(case_json(c));
  std::vector<std::string> skipped;
  for (const std::string& s : r.skipped) skipped.push_back(json_string(s));
  std::string doc = "{\n";
  doc += "  \"tool\": \"uvm-link-bench\",\n  \"schema_version\": 1,\n";
  doc += "  \"complete\": " + std::string(complete ? "true" : "false") + ",\n";
  doc += "  \"elapsed_s\": " + json_number(elapsed_s) + ",\n";
  doc += r.meta_json;
  doc += "  \"pcie_link_busy\": " + r.link_busy_json + ",\n";
  doc += "  \"init\": " + json_array(r.init_json, "  ") + ",\n";
  doc += "  \"cases\": " + json_array(cases, "  ") + ",\n";
  doc += "  \"fits\": " + json_array(fits_json(r), "  ") + ",\n";
  doc += "  \"skipped\": " + json_array(skipped, "  ") + "\n}\n";
  const std::string tmp = o.out_path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) die("cannot write %s: %s", tmp.c_str(), std::strerror(errno));
  const bool ok = std::fwrite(doc.data(), 1, doc.size(), f) == doc.size();
  if (std::fclose(f) != 0 || !ok) die("cannot write %s: %s", tmp.c_str(), std::strerror(errno));
  if (std::rename(tmp.c_str(), o.out_path.c_str()) != 0) {
    die("cannot rename %s to %s: %s", tmp.c_str(), o.out_path.c_str(), std::strerror(errno));
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The run.

struct Runner {
  const Options& o;
  Bench& bench;
  Report& report;
  Nvml& nvml;

  void record(Case c) {
    c.median_ms = median(c.samples.total_ms);
    c.gb_per_s = gbps(c.payload_bytes, c.median_ms);
    // Host memory cannot be read faster than the link; a figure above the pinned memcpy's says the rows did not
    // cross it (pages migrated to the GPU, or served from its L2), so the case does not measure the link.
    if (c.memory == "managed" || c.memory == "host_mapped") {
      const double ceiling = c.kind == "gather"    ? report.ceiling_h2d
                             : c.kind == "scatter" ? report.ceiling_d2h
                                                   : report.ceiling_duplex;
      c.exceeds_ceiling = std::isfinite(ceiling) && c.gb_per_s > 1.05 * ceiling;
    }
    std::fprintf(stderr, "[%6.1f s] %-13s %-11s %-4s d=%-4s rows=%-8s %9.3f ms %8.2f GB/s%s%s\n", bench.elapsed_s(),
                 c.kind.c_str(), c.memory.c_str(), c.dtype.c_str(),
                 c.dtype.empty() ? "-" : std::to_string(c.dim).c_str(),
                 c.dtype.empty() ? "-" : std::to_string(c.rows).c_str(), c.median_ms, c.gb_per_s,
                 c.samples.truncated ? " (truncated: time budget)" : "",
                 c.exceeds_ceiling ? " (ABOVE the memcpy ceiling: rows migrated or cached?)" : "");
    report.cases.push_back(std::move(c));
    write_report(o, report, false, bench.elapsed_s());
  }

  // (d) The link's ceiling: large pinned copies, one direction at a time and both at once.
  void memcpy_ceiling() {
    void *host_a = nullptr, *host_b = nullptr, *dev_a = nullptr, *dev_b = nullptr;
    CUDA_CHECK(cudaHostAlloc(&host_a, kMemcpyBytes, cudaHostAllocDefault));
    CUDA_CHECK(cudaHostAlloc(&host_b, kMemcpyBytes, cudaHostAllocDefault));
    CUDA_CHECK(cudaMalloc(&dev_a, kMemcpyBytes));
    CUDA_CHECK(cudaMalloc(&dev_b, kMemcpyBytes));
    std::memset(host_a, 1, kMemcpyBytes);
    std::memset(host_b, 2, kMemcpyBytes);
    const int64_t bytes = static_cast<int64_t>(kMemcpyBytes);
    auto h2d = [&](int) {
      CUDA_CHECK(cudaMemcpyAsync(dev_a, host_a, kMemcpyBytes, cudaMemcpyHostToDevice, bench.s0()));
    };
    auto d2h = [&](int) {
      CUDA_CHECK(cudaMemcpyAsync(host_b, dev_b, kMemcpyBytes, cudaMemcpyDeviceToHost, bench.s1()));
    };
    auto d2h_main = [&](int) {
      CUDA_CHECK(cudaMemcpyAsync(host_b, dev_b, kMemcpyBytes, cudaMemcpyDeviceToHost, bench.s0()));
    };
    Case c{"memcpy_h2d", "pinned"};
    c.payload_bytes = bytes;
    c.samples = bench.time(h2d);
    record(c);
    report.ceiling_h2d = report.cases.back().gb_per_s;
    c = Case{"memcpy_d2h", "pinned"};
    c.payload_bytes = bytes;
    c.samples = bench.time(d2h_main);
    record(c);
    report.ceiling_d2h = report.cases.back().gb_per_s;
    // The link's generation is read while both directions are busy: an idle GPU reports a trained-down link.
    c = Case{"memcpy_duplex", "pinned"};
    c.payload_bytes = 2 * bytes;
    c.samples = bench.time(h2d, [&](int slice) {
      d2h(slice);
      if (slice == kWarmups - 1) report.link_busy_json = nvml.link_json();
    });
    record(c);
    report.ceiling_duplex = report.cases.back().gb_per_s;
    CUDA_CHECK(cudaFreeHost(host_a));
    CUDA_CHECK(cudaFreeHost(host_b));
    CUDA_CHECK(cudaFree(dev_a));
    CUDA_CHECK(cudaFree(dev_b));
  }

  // Past the deadline a whole memory kind is skipped before its 4 GiB table is allocated.
  bool skip_if_late(const std::string& memory) {
    if (!bench.late()) return false;
    report.skipped.push_back(memory + ": every case: past --max-seconds");
    write_report(o, report, false, bench.elapsed_s());
    return true;
  }

  // Prepares a table for the GPU (fill from the GPU, then touch every page) and records what that cost.
  void prepare_table(const std::string& memory, void* table, double alloc_ms, double populate_ms) {
    cudaEvent_t a, b;
    CUDA_CHECK(cudaEventCreate(&a));
    CUDA_CHECK(cudaEventCreate(&b));
    uint32_t* sink = nullptr;
    CUDA_CHECK(cudaMalloc(&sink, sizeof(uint32_t)));
    const int blocks = bench.sms() * 8;
    CUDA_CHECK(cudaEventRecord(a, bench.s0()));
    fill_table<<<blocks, kBlockThreads, 0, bench.s0()>>>(static_cast<uint4*>(table), o.table_bytes / sizeof(uint4));
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaEventRecord(b, bench.s0()));
    CUDA_CHECK(cudaEventSynchronize(b));
    float fill_ms = 0, touch_ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&fill_ms, a, b));
    CUDA_CHECK(cudaEventRecord(a, bench.s0()));
    touch_pages<<<blocks, kBlockThreads, 0, bench.s0()>>>(static_cast<const uint32_t*>(table),
                                                          o.table_bytes / sizeof(uint32_t), sink);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaEventRecord(b, bench.s0()));
    CUDA_CHECK(cudaEventSynchronize(b));
    CUDA_CHECK(cudaEventElapsedTime(&touch_ms, a, b));
    CUDA_CHECK(cudaFree(sink));
    CUDA_CHECK(cudaEventDestroy(a));
    CUDA_CHECK(cudaEventDestroy(b));
    report.init_json.push_back(JsonObject()
                                   .str("memory", memory)
                                   .integer("table_bytes", static_cast<int64_t>(o.table_bytes))
                                   .num("alloc_ms", alloc_ms)
                                   .num("populate_ms", populate_ms)
                                   .num("gpu_fill_ms", fill_ms)
                                   .num("gpu_fill_GB_per_s", gbps(static_cast<int64_t>(o.table_bytes), fill_ms))
                                   .num("page_touch_ms", touch_ms)
                                   .text());
    std::fprintf(stderr,
                 "[%6.1f s] %s table of %zu MiB: alloc %.0f ms, populate %.0f ms, GPU fill %.0f ms (%.1f GB/s), "
                 "page touch %.1f ms\n",
                 bench.elapsed_s(), memory.c_str(), o.table_bytes >> 20, alloc_ms, populate_ms, fill_ms,
                 gbps(static_cast<int64_t>(o.table_bytes), fill_ms), touch_ms);
  }

  // (a)(b)(c)(e)(f): gather, scatter and (for managed) both at once, for every width and row count.
  void row_cases(const std::string& memory, void* table, const std::vector<int64_t*>& pools, void* gather_out,
                 void* scatter_in, bool duplex) {
    const int64_t slice_rows = o.row_counts.back();
    for (size_t d = 0; d < o.dims.size(); ++d) {
      const DimConfig& dc = o.dims[d];
      const int64_t row_bytes = static_cast<int64_t>(dc.dim) * dc.elem_bytes;
      for (int64_t rows : o.row_counts) {
        if (bench.late()) {
          report.skipped.push_back(memory + " " + dc.dtype + " d=" + std::to_string(dc.dim) +
                                   " rows=" + std::to_string(rows) + ": past --max-seconds");
          continue;
        }
        const int64_t* pool = pools[d];
        auto ids_of = [&](int slice) { return pool + (slice % kSlices) * slice_rows; };
        for (Direction dir : {Direction::kGather, Direction::kScatter}) {
          Case c{dir == Direction::kGather ? "gather" : "scatter", memory, dc.dtype, dc.dim, row_bytes, rows};
          c.payload_bytes = rows * row_bytes;
          c.shape = row_shape(bench, dir, row_bytes, rows, false);
          void* buffer = dir == Direction::kGather ? gather_out : scatter_in;
          c.samples = bench.time(
              [&](int slice) { launch_row_kernel(dir, c.shape, table, ids_of(slice), buffer, rows, bench.s0()); });
          record(c);
        }
        if (duplex) {
          Case c{"duplex", memory, dc.dtype, dc.dim, row_bytes, rows};
          c.payload_bytes = 2 * rows * row_bytes;
          c.shape = row_shape(bench, Direction::kGather, row_bytes, rows, true);
          const LaunchShape write_shape = row_shape(bench, Direction::kScatter, row_bytes, rows, true);
          c.samples = bench.time(
              [&](int slice) {
                launch_row_kernel(Direction::kGather, c.shape, table, ids_of(slice), gather_out, rows, bench.s0());
              },
              [&](int slice) {
                launch_row_kernel(Direction::kScatter, write_shape, table, ids_of(slice + 1), scatter_in, rows,
                                  bench.s1());
              });
          record(c);
        }
      }
    }
  }
};

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

std::string device_json(int device, const cudaDeviceProp& prop, const std::string& bus_id) {
  auto attr = [&](cudaDeviceAttr a) {
    int v = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&v, a, device));
    return static_cast<int64_t>(v);
  };
  return JsonObject()
      .integer("index", device)
      .str("name", prop.name)
      .str("compute_capability", std::to_string(prop.major) + "." + std::to_string(prop.minor))
      .str("pci_bus_id", bus_id)
      .integer("sms", attr(cudaDevAttrMultiProcessorCount))
      .integer("l2_bytes", attr(cudaDevAttrL2CacheSize))
      .integer("hbm_bytes", static_cast<int64_t>(prop.totalGlobalMem))
      // What decides how host memory reaches this GPU: pageable access is 1 with HMM (x86) or ATS, and host page
      // tables and native atomics are 1 on Grace Hopper, whose link is NVLink-C2C, not PCIe.
      .integer("concurrent_managed_access", attr(cudaDevAttrConcurrentManagedAccess))
      .integer("pageable_memory_access", attr(cudaDevAttrPageableMemoryAccess))
      .integer("pageable_memory_access_uses_host_page_tables", attr(cudaDevAttrPageableMemoryAccessUsesHostPageTables))
      .integer("direct_managed_mem_access_from_host", attr(cudaDevAttrDirectManagedMemAccessFromHost))
      .integer("host_native_atomic_supported", attr(cudaDevAttrHostNativeAtomicSupported))
#if CUDART_VERSION >= 12020
      .integer("host_numa_id", attr(cudaDevAttrHostNumaId))
#endif
      .text();
}

void print_summary(const Options& o, const Report& r, const cudaDeviceProp& prop) {
  std::fprintf(stderr, "\nuvm-link-bench summary: %s\n", prop.name);
  std::fprintf(stderr, "  pinned memcpy %zu MiB: H2D %.1f GB/s, D2H %.1f GB/s, both at once %.1f GB/s\n",
               kMemcpyBytes >> 20, r.ceiling_h2d, r.ceiling_d2h, r.ceiling_duplex);
  const int64_t rows = o.row_counts.back();
  std::fprintf(stderr, "  GB/s at %lld rows per launch:\n", static_cast<long long>(rows));
  const char* columns[][2] = {{"gather", "managed"},     {"scatter", "managed"}, {"duplex", "managed"},
                              {"gather", "host_mapped"}, {"gather", "hbm"},      {"scatter", "hbm"}};
  std::fprintf(stderr, "    %-11s", "");
  for (auto& col : columns) std::fprintf(stderr, " %19s", (std::string(col[0]) + "/" + col[1]).c_str());
  std::fprintf(stderr, "\n");
  for (const DimConfig& dc : o.dims) {
    std::fprintf(stderr, "    %-4s d=%-4d", dc.dtype, dc.dim);
    for (auto& col : columns) {
      double v = NAN;
      for (const Case& c : r.cases) {
        if (c.kind == col[0] && c.memory == col[1] && c.dtype == dc.dtype && c.dim == dc.dim && c.rows == rows) {
          v = c.gb_per_s;
        }
      }
      if (std::isfinite(v)) {
        std::fprintf(stderr, " %19.2f", v);
      } else {
        std::fprintf(stderr, " %19s", "-");
      }
    }
    std::fprintf(stderr, "\n");
  }
  std::fprintf(stderr, "  managed memory, time = alpha + rows * beta (marginal GB/s = row bytes / beta):\n");
  for (const FitRow& row : fits_of(r)) {
    if (row.first->memory != "managed") continue;
    std::fprintf(stderr, "    %-7s %-4s d=%-4d alpha %8.1f us  beta %8.2f ns/row  %7.2f GB/s  (max residual %.0f%%)\n",
                 row.first->kind.c_str(), row.first->dtype.c_str(), row.first->dim, row.fit.alpha_ms * 1e3,
                 row.fit.beta_ms * 1e6, row.marginal_gb_per_s, row.fit.max_rel_residual * 100);
  }
  bool warned = false;
  for (const Case& c : r.cases) {
    if (c.exceeds_ceiling && !warned) {
      std::fprintf(stderr,
                   "  WARNING: some host-memory cases beat the pinned memcpy ceiling (see exceeds_memcpy_"
                   "ceiling): the driver may have migrated pages to the GPU, so those figures are not the link's\n");
      warned = true;
    }
  }
  if (!r.skipped.empty()) std::fprintf(stderr, "  %zu cases skipped: past --max-seconds\n", r.skipped.size());
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_options(argc, argv);

  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    die("no usable CUDA device (cudaGetDeviceCount: %s: %s); this benchmark needs a GPU",
        err == cudaSuccess ? "cudaSuccess" : cudaGetErrorName(err),
        err == cudaSuccess ? "0 devices" : cudaGetErrorString(err));
  }
  if (o.device < 0 || o.device >= count) die("--device %d: this machine has %d CUDA devices", o.device, count);
  CUDA_CHECK(cudaSetDevice(o.device));
  CUDA_CHECK(cudaFree(nullptr));  // create the context now, outside every timing

  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, o.device));
  char bus_id[32] = {0};
  CUDA_CHECK(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, o.device));
  int driver = 0, runtime = 0;
  CUDA_CHECK(cudaDriverGetVersion(&driver));
  CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  int concurrent_managed = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&concurrent_managed, cudaDevAttrConcurrentManagedAccess, o.device));
  if (!concurrent_managed) {
    die("%s cannot access managed memory concurrently with the CPU (cudaDevAttrConcurrentManagedAccess = 0), so "
        "FBGEMM's UVM layout does not apply to it",
        prop.name);
  }
  const int64_t largest_row = [&] {
    int64_t m = 0;
    for (const DimConfig& dc : o.dims) m = std::max<int64_t>(m, int64_t{dc.dim} * dc.elem_bytes);
    return m;
  }();
  const int64_t slice_rows = o.row_counts.back();
  {
    size_t free_bytes = 0, total_bytes = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    const size_t need = o.table_bytes + static_cast<size_t>(2 * slice_rows * largest_row) +
                        o.dims.size() * static_cast<size_t>(slice_rows) * kSlices * sizeof(int64_t) + (size_t{1} << 30);
    if (free_bytes < need) {
      die("%s has %zu MiB free, the benchmark needs about %zu MiB", prop.name, free_bytes >> 20, need >> 20);
    }
  }

  Nvml nvml(bus_id);
  Bench bench(o, o.device);
  Report report;
  {
    std::string settings = JsonObject()
                               .integer("table_bytes", static_cast<int64_t>(o.table_bytes))
                               .add("row_counts",
                                    [&] {
                                      std::string s = "[";
                                      for (size_t i = 0; i < o.row_counts.size(); ++i)
                                        s += (i ? ", " : "") + json_int(o.row_counts[i]);
                                      return s + "]";
                                    }())
                               .integer("warmups", kWarmups)
                               .integer("reps", kReps)
                               .integer("seed", static_cast<int64_t>(kSeed))
                               .integer("block_threads", kBlockThreads)
                               .integer("l2_flush_bytes", static_cast<int64_t>(bench.flush_bytes()))
                               .integer("memcpy_bytes", static_cast<int64_t>(kMemcpyBytes))
                               .num("max_seconds", o.max_seconds)
                               .boolean("quick", o.quick)
                               .text();
    report.meta_json = "  \"device\": " + device_json(o.device, prop, bus_id) + ",\n" +
                       "  \"driver_version\": " + json_string(version_text(driver)) + ",\n" +
                       "  \"runtime_version\": " + json_string(version_text(runtime)) + ",\n" +
                       "  \"host_numa_node_of_main_thread\": " + json_int(current_numa_node()) + ",\n" +
                       "  \"pcie_link_idle\": " + nvml.link_json() + ",\n" +
                       "  \"pcie_path_sysfs\": " + pcie_path_json(bus_id) + ",\n" + "  \"settings\": " + settings +
                       ",\n";
  }
  std::fprintf(stderr, "uvm-link-bench: %s (%s), driver %s, runtime %s, %zu MiB tables, up to %.0f s\n", prop.name,
               bus_id, version_text(driver).c_str(), version_text(runtime).c_str(), o.table_bytes >> 20, o.max_seconds);

  // Id pools (one per width: the table's row count depends on it) and the device-side row buffers, shared by all
  // memory kinds so every kind reads the same rows.
  std::vector<int64_t*> pools;
  for (const DimConfig& dc : o.dims) {
    pools.push_back(make_id_pool(static_cast<int64_t>(o.table_bytes / (int64_t{dc.dim} * dc.elem_bytes)), slice_rows));
  }
  void *gather_out = nullptr, *scatter_in = nullptr;
  CUDA_CHECK(cudaMalloc(&gather_out, slice_rows * largest_row));
  CUDA_CHECK(cudaMalloc(&scatter_in, slice_rows * largest_row));
  CUDA_CHECK(cudaMemset(gather_out, 0, slice_rows * largest_row));
  CUDA_CHECK(cudaMemset(scatter_in, 0x5a, slice_rows * largest_row));

  write_report(o, report, false, bench.elapsed_s());  // the device description survives even an early failure

  Runner run{o, bench, report, nvml};
  run.memcpy_ceiling();

  // One 4 GiB table at a time, freed before the next, so host memory never holds two.
  if (!run.skip_if_late("managed")) {
    // Managed memory exactly as FBGEMM's new_managed_tensor makes it, then populated on the host side by one bulk
    // prefetch instead of a fault per page.
    auto t = Clock::now();
    void* table = nullptr;
    CUDA_CHECK(cudaMallocManaged(&table, o.table_bytes, cudaMemAttachGlobal));
    mem_advise(table, o.table_bytes, cudaMemAdviseSetPreferredLocation, true, o.device);
    mem_advise(table, o.table_bytes, cudaMemAdviseSetAccessedBy, false, o.device);
    const double alloc_ms = ms_since(t);
    t = Clock::now();
    prefetch_to_host(table, o.table_bytes, bench.s0());
    CUDA_CHECK(cudaStreamSynchronize(bench.s0()));
    run.prepare_table("managed", table, alloc_ms, ms_since(t));
    run.row_cases("managed", table, pools, gather_out, scatter_in, true);
    CUDA_CHECK(cudaFree(table));
  }
  if (!run.skip_if_late("hbm")) {
    auto t = Clock::now();
    void* table = nullptr;
    CUDA_CHECK(cudaMalloc(&table, o.table_bytes));
    run.prepare_table("hbm", table, ms_since(t), NAN);
    run.row_cases("hbm", table, pools, gather_out, scatter_in, false);
    CUDA_CHECK(cudaFree(table));
  }
  if (!run.skip_if_late("host_mapped")) {
    // Zero-copy: pinned host pages mapped into the GPU's address space, with no UVM driver involved.
    auto t = Clock::now();
    void* host = nullptr;
    void* table = nullptr;
    CUDA_CHECK(cudaHostAlloc(&host, o.table_bytes, cudaHostAllocMapped));
    CUDA_CHECK(cudaHostGetDevicePointer(&table, host, 0));
    run.prepare_table("host_mapped", table, ms_since(t), NAN);  // cudaHostAlloc populates and pins
    run.row_cases("host_mapped", table, pools, gather_out, scatter_in, false);
    CUDA_CHECK(cudaFreeHost(host));
  }

  for (int64_t* p : pools) CUDA_CHECK(cudaFree(p));
  CUDA_CHECK(cudaFree(gather_out));
  CUDA_CHECK(cudaFree(scatter_in));
  write_report(o, report, true, bench.elapsed_s());
  print_summary(o, report, prop);
  std::fprintf(stderr, "uvm-link-bench: wrote %s in %.1f s\n", o.out_path.c_str(), bench.elapsed_s());
  return 0;
}
