// dispatch_table.h: a forward pass recorded once as a flat list of GPU
// commands, and encodeChain(), which replays it for n tokens in one command
// buffer with a few fields patched per token.
//
// Positions: step i of a chain that starts at `start` reads the token at
// sequence position p = start + i and produces the token at p + 1. Token
// buffers hold the whole sequence, one uint32 per position, so a chunk
// reads tokens the previous chunk wrote on the GPU without the CPU in
// between (that is what lets chunk k + 1 be queued before chunk k ends).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "device.h"

namespace md {

constexpr uint32_t kMaxCommandBuffers = 12;  // buffers one command binds (md_draft_probability_f16: 9)
constexpr uint32_t kMaxInlineParams = 64;    // bytes of setBytes parameters
constexpr uint32_t kMaxBufferIndex = 30;     // Metal's [[buffer(n)]] limit
constexpr uint8_t kNoField = 0xFF;           // an unused Patch field

// What encodeChain changes in a command at step p (sequence position p).
enum class PatchRule : uint8_t {
  None,
  // Binding `buffer` at offset + 4p: e.g. an embedding reads token p.
  TokenOffset,
  // The uint32 params field(s) at byte offset fields[0] (and fields[1] if
  // used) = p: e.g. a rotary embedding's position.
  Position,
  // The field(s) = p + 1: e.g. attention over a KV cache of p + 1 entries.
  KvLength,
  // fields[0] = p and fields[1] = p + 1.
  PositionAndKvLength,
  // Binding `buffer` at offset + 4(p + 1): argmax writes token p + 1.
  ArgmaxOutput,
  // A sampling kernel (md_sample_f16): ArgmaxOutput for its output binding,
  // and KvLength for its fields: it samples the token at position p + 1
  // (fields[0], the noise position) from p + 1 tokens of history
  // (fields[1]).
  SampledToken,
};

const char* patchRuleName(PatchRule rule);

struct Patch {
  PatchRule rule = PatchRule::None;
  uint8_t buffer = 0;                        // the [[buffer(n)]] index, for offset rules
  uint8_t fields[2] = {kNoField, kNoField};  // byte offsets in the params, for field rules
  // The command acts for position p + ahead: row `ahead` of a table that
  // evaluates several consecutive tokens in one step (speculative
  // verification samples each row at its own position), or a row of a
  // batched decode step whose sequence is `ahead` positions past the
  // step's first (the table runs from the lowest of its rows' positions).
  uint32_t ahead = 0;
};

// Most positions a command looks ahead: more than any context.
constexpr uint32_t kMaxPatchAhead = (1u << 24) - 1;

struct BufferBinding {
  Buffer* buffer = nullptr;  // kept alive by the table (DispatchTable::retain)
  uint64_t offset = 0;       // where the kernel's pointer starts, before any patch
  uint32_t index = 0;        // [[buffer(index)]]
};

// One dispatch, as plain data: copied, compared and patched freely.
struct DispatchCmd {
  const Pipeline* pipeline = nullptr;
  BufferBinding buffers[kMaxCommandBuffers];
  uint32_t bufferCount = 0;
  uint8_t params[kMaxInlineParams] = {};
  uint32_t paramsSize = 0;   // 0: no inline parameters
  uint32_t paramsIndex = 0;  // [[buffer(paramsIndex)]] for the params
  uint32_t threadgroups = 1;
  uint32_t threadsPerThreadgroup = 32;
  uint32_t threadgroupMemory = 0;  // bytes at [[threadgroup(0)]]; 0 for none
  Patch patch;
};
static_assert(std::is_trivially_copyable<DispatchCmd>::value, "DispatchCmd is plain data");

// Whether `rule` moves a buffer binding each step (to token p or p + 1).
bool movesBuffer(PatchRule rule);
// The token slot a moved binding points at in step p.
uint64_t patchedSlot(const Patch& patch, uint64_t p);
// The binding of [[buffer(index)]] in `cmd`, or nullptr.
const BufferBinding* findBinding(const DispatchCmd& cmd, uint32_t index);

// Why `cmd` is malformed, or an empty string: buffer indices unique and in
// range, params within 64 bytes on an index no buffer uses, patch targets
// that exist (a bound buffer, a 4-byte field inside the params), offsets
// inside their buffers, a sane grid.
std::string commandProblem(const DispatchCmd& cmd);

class DispatchTable {
 public:
  // Appends a command; throws DeviceError naming `label` if it is malformed.
  void add(const DispatchCmd& cmd, std::string label);
  // Keeps a buffer the commands point at alive as long as the table.
  void retain(std::shared_ptr<Buffer> buffer);

  const std::vector<DispatchCmd>& commands() const { return commands_; }
  const std::string& label(size_t i) const { return labels_[i]; }
  size_t size() const { return commands_.size(); }

 private:
  std::vector<DispatchCmd> commands_;
  std::vector<std::string> labels_;  // cold: only errors and profiling read them
  std::vector<std::shared_ptr<Buffer>> retained_;
};

// A chain that cannot run as asked: a patched offset would leave its buffer
// (the sequence buffer is too short), a position would overflow uint32, or
// it is more work than one call may encode (kMaxChainCallDispatches).
class ChainError : public DeviceError {
 public:
  using DeviceError::DeviceError;
};

// Throws ChainError if steps start .. start + n - 1 of `table` cannot run.
void checkChain(const DispatchTable& table, uint32_t start, uint32_t n);

// Encodes steps p = start .. start + n - 1 of `table` into `commands`, in
// order, after checkChain.
void encodeChain(CommandBuffer& commands, const DispatchTable& table, uint32_t start, uint32_t n);

// The most dispatches one command buffer of a chain holds. A GPU stops a
// command buffer that runs for more than a few seconds (the watchdog), so
// commitChain splits a longer chain into several command buffers queued
// back to back: the GPU runs them without a pause, and no single one runs
// long. 4,096 dispatches of a 1B model's decode step (about 200 per token)
// are 20 tokens, tens to a few hundred milliseconds on Apple silicon.
constexpr uint32_t kMaxChainDispatches = 4096;

// The most dispatches (steps x commands) one commitChain call encodes: it
// encodes on the caller's thread and holds them all until they ran, so a
// mistaken n of billions must be an error, not an allocation. Chains run
// in chunks far below this (ChainRunner: 16 steps by default).
constexpr uint64_t kMaxChainCallDispatches = 1u << 16;

// Steps of `table` per command buffer: as many whole steps as fit in
// kMaxChainDispatches, at least one.
uint32_t chainStepsPerCommandBuffer(const DispatchTable& table);

// Commits steps start .. start + n - 1 of `table` on `device`, in command
// buffers of chainStepsPerCommandBuffer steps. `onCompleted` runs once,
// after the last of them completed, with the first error of any ("" if
// none). Throws (ChainError, or DeviceError such as an earlier
// asynchronous error) only when nothing was committed; after that, a
// failure goes to `onCompleted`.
void commitChain(Device& device, const DispatchTable& table, uint32_t start, uint32_t n, Completion onCompleted);

}  // namespace md
