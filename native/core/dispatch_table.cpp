// dispatch_table.cpp: command checks and the chain encoder.
#include "dispatch_table.h"

#include "kernel_contracts.h"

#include <algorithm>
#include <cstring>
#include <mutex>

namespace md {
namespace {

bool writesFields(PatchRule rule) {
  return rule == PatchRule::Position || rule == PatchRule::KvLength || rule == PatchRule::PositionAndKvLength ||
         rule == PatchRule::SampledToken;
}

// How many of the two fields a rule needs (at least; Position and KvLength
// may also write a second one).
uint32_t requiredFields(PatchRule rule) {
  if (rule == PatchRule::PositionAndKvLength || rule == PatchRule::SampledToken) return 2;
  return writesFields(rule) ? 1 : 0;
}

void writeField(uint8_t* params, uint8_t field, uint32_t value) {
  if (field != kNoField) std::memcpy(params + field, &value, 4);
}

// `cmd`'s params as step p sees them, into `out` (kMaxInlineParams bytes).
void patchParams(const DispatchCmd& cmd, uint64_t p, uint8_t* out) {
  std::memcpy(out, cmd.params, kMaxInlineParams);
  const Patch& patch = cmd.patch;
  const uint32_t position = uint32_t(p + patch.ahead);
  const uint32_t kvLength = uint32_t(p + patch.ahead + 1);
  switch (patch.rule) {
    case PatchRule::Position:
      writeField(out, patch.fields[0], position);
      writeField(out, patch.fields[1], position);
      break;
    case PatchRule::KvLength:
    case PatchRule::SampledToken:
      writeField(out, patch.fields[0], kvLength);
      writeField(out, patch.fields[1], kvLength);
      break;
    case PatchRule::PositionAndKvLength:
      writeField(out, patch.fields[0], position);
      writeField(out, patch.fields[1], kvLength);
      break;
    default: break;
  }
}

}  // namespace

bool movesBuffer(PatchRule rule) {
  return rule == PatchRule::TokenOffset || rule == PatchRule::ArgmaxOutput || rule == PatchRule::SampledToken;
}

uint64_t patchedSlot(const Patch& patch, uint64_t p) {
  return p + patch.ahead + (patch.rule == PatchRule::TokenOffset ? 0 : 1);
}

const BufferBinding* findBinding(const DispatchCmd& cmd, uint32_t index) {
  for (uint32_t i = 0; i < cmd.bufferCount; ++i)
    if (cmd.buffers[i].index == index) return &cmd.buffers[i];
  return nullptr;
}

const char* patchRuleName(PatchRule rule) {
  switch (rule) {
    case PatchRule::None: return "none";
    case PatchRule::TokenOffset: return "tokenOffset";
    case PatchRule::Position: return "position";
    case PatchRule::KvLength: return "kvLength";
    case PatchRule::PositionAndKvLength: return "positionAndKvLength";
    case PatchRule::ArgmaxOutput: return "argmaxOutput";
    case PatchRule::SampledToken: return "sampledToken";
  }
  return "unknown";
}

std::string commandProblem(const DispatchCmd& cmd) {
  if (!cmd.pipeline) return "no pipeline";
  if (cmd.bufferCount > kMaxCommandBuffers)
    return "binds " + std::to_string(cmd.bufferCount) + " buffers; at most " + std::to_string(kMaxCommandBuffers);
  if (cmd.paramsSize > kMaxInlineParams)
    return "has " + std::to_string(cmd.paramsSize) + " bytes of params; at most " + std::to_string(kMaxInlineParams);
  if (cmd.threadgroups == 0) return "dispatches 0 threadgroups";
  if (cmd.threadsPerThreadgroup == 0 || cmd.threadsPerThreadgroup % 32 != 0 ||
      cmd.threadsPerThreadgroup > cmd.pipeline->maxThreadsPerThreadgroup())
    return "threadsPerThreadgroup " + std::to_string(cmd.threadsPerThreadgroup) +
           " is not a multiple of 32 from 32 to " + std::to_string(cmd.pipeline->maxThreadsPerThreadgroup());
  if (std::string problem = threadgroupMemoryProblem(cmd.threadgroupMemory); !problem.empty()) return problem;
  if (cmd.paramsSize > 0 && cmd.paramsIndex > kMaxBufferIndex)
    return "params index " + std::to_string(cmd.paramsIndex) + " is over " + std::to_string(kMaxBufferIndex);
  for (uint32_t i = 0; i < cmd.bufferCount; ++i) {
    const BufferBinding& b = cmd.buffers[i];
    const std::string which = "buffer " + std::to_string(b.index);
    if (!b.buffer) return which + " is null";
    if (b.index > kMaxBufferIndex) return which + ": index over " + std::to_string(kMaxBufferIndex);
    if (cmd.paramsSize > 0 && b.index == cmd.paramsIndex) return which + ": the params use this index";
    for (uint32_t j = 0; j < i; ++j)
      if (cmd.buffers[j].index == b.index) return which + " is bound twice";
    if (b.offset >= b.buffer->length())
      return which + ": offset " + std::to_string(b.offset) + " is outside its " + std::to_string(b.buffer->length()) +
             "-byte buffer";
  }
  const Patch& patch = cmd.patch;
  if (patch.ahead > kMaxPatchAhead)
    return "patch ahead " + std::to_string(patch.ahead) + " is over " + std::to_string(kMaxPatchAhead);
  if (patch.ahead != 0 && patch.rule == PatchRule::None) return "patch none cannot look ahead";
  if (movesBuffer(patch.rule) && !findBinding(cmd, patch.buffer))
    return std::string("patch ") + patchRuleName(patch.rule) + ": buffer " + std::to_string(patch.buffer) +
           " is not bound";
  for (uint32_t f = 0; f < 2; ++f) {
    const uint8_t field = patch.fields[f];
    if (field == kNoField) {
      if (f < requiredFields(patch.rule))
        return std::string("patch ") + patchRuleName(patch.rule) + " needs " +
               std::to_string(requiredFields(patch.rule)) + " params field(s)";
      continue;
    }
    if (!writesFields(patch.rule)) return std::string("patch ") + patchRuleName(patch.rule) + " writes no params field";
    if (field % 4 != 0 || uint32_t(field) + 4 > cmd.paramsSize)
      return std::string("patch ") + patchRuleName(patch.rule) + ": field at byte " + std::to_string(field) +
             " is not an aligned uint32 inside the " + std::to_string(cmd.paramsSize) + " bytes of params";
  }
  // What the kernel itself reads and writes (the built-in kernels).
  return kernelContractProblem(cmd, cmd.params, movesBuffer(patch.rule) ? patchedSlot(patch, 0) : 0);
}

void DispatchTable::add(const DispatchCmd& cmd, std::string label) {
  std::string problem = commandProblem(cmd);
  if (!problem.empty()) throw DeviceError("command '" + label + "': " + problem);
  commands_.push_back(cmd);
  labels_.push_back(std::move(label));
}

void DispatchTable::retain(std::shared_ptr<Buffer> buffer) { retained_.push_back(std::move(buffer)); }

void checkChain(const DispatchTable& table, uint32_t start, uint32_t n) {
  if (n == 0) return;
  if (uint64_t(n) * table.size() > kMaxChainCallDispatches)
    throw ChainError("encodeChain: " + std::to_string(n) + " steps of a " + std::to_string(table.size()) +
                     "-command table are " + std::to_string(uint64_t(n) * table.size()) + " dispatches; at most " +
                     std::to_string(kMaxChainCallDispatches) + " per call: run the chain in chunks");
  const uint64_t last = uint64_t(start) + n - 1;
  uint64_t farthest = 0;  // the most any command looks ahead
  for (const DispatchCmd& cmd : table.commands()) farthest = std::max<uint64_t>(farthest, cmd.patch.ahead);
  if (last + farthest + 1 > UINT32_MAX)
    throw ChainError("encodeChain: positions " + std::to_string(start) + " + " + std::to_string(n) +
                     " overflow uint32");
  // At the last step, every moved binding must still hold a whole uint32,
  // and every kernel's contract must hold: the patched fields (position, KV
  // or history length) only grow with p.
  uint8_t params[kMaxInlineParams];
  for (size_t c = 0; c < table.size(); ++c) {
    const DispatchCmd& cmd = table.commands()[c];
    if (movesBuffer(cmd.patch.rule)) {
      const BufferBinding& b = *findBinding(cmd, cmd.patch.buffer);
      const uint64_t end = b.offset + 4 * patchedSlot(cmd.patch, last) + 4;
      if (end > b.buffer->length())
        throw ChainError("encodeChain: command '" + table.label(c) + "' (" + patchRuleName(cmd.patch.rule) +
                         ") needs " + std::to_string(end) + " bytes of buffer " + std::to_string(b.index) +
                         " for positions " + std::to_string(start) + ".." + std::to_string(last) + ", but it has " +
                         std::to_string(b.buffer->length()));
    }
    patchParams(cmd, last, params);
    const std::string problem =
        kernelContractProblem(cmd, params, movesBuffer(cmd.patch.rule) ? patchedSlot(cmd.patch, last) : 0);
    if (!problem.empty())
      throw ChainError("encodeChain: command '" + table.label(c) + "' at position " + std::to_string(last) + ": " +
                       problem);
  }
}

namespace {

// encodeChain after checkChain passed for a range holding these steps.
void encodeSteps(CommandBuffer& commands, const DispatchTable& table, uint32_t start, uint32_t n) {
  if (n == 0) return;
  const uint64_t last = uint64_t(start) + n - 1;
  uint8_t params[kMaxInlineParams];
  for (uint64_t p = start; p <= last; ++p) {
    for (size_t c = 0; c < table.size(); ++c) {
      const DispatchCmd& cmd = table.commands()[c];
      const Patch& patch = cmd.patch;
      commands.setPipeline(*cmd.pipeline);
      for (uint32_t i = 0; i < cmd.bufferCount; ++i) {
        const BufferBinding& b = cmd.buffers[i];
        uint64_t offset = b.offset;
        if (movesBuffer(patch.rule) && b.index == patch.buffer) offset += 4 * patchedSlot(patch, p);
        commands.setBuffer(b.index, *b.buffer, offset);
      }
      if (cmd.paramsSize > 0) {
        patchParams(cmd, p, params);
        commands.setBytes(cmd.paramsIndex, params, cmd.paramsSize);
      }
      if (cmd.threadgroupMemory > 0) commands.setThreadgroupMemory(0, cmd.threadgroupMemory);
      commands.labelNextDispatch(table.label(c));
      commands.dispatch(cmd.threadgroups, cmd.threadsPerThreadgroup);
    }
  }
}

}  // namespace

void encodeChain(CommandBuffer& commands, const DispatchTable& table, uint32_t start, uint32_t n) {
  checkChain(table, start, n);
  encodeSteps(commands, table, start, n);
}

uint32_t chainStepsPerCommandBuffer(const DispatchTable& table) {
  return std::max<uint32_t>(1, uint32_t(kMaxChainDispatches / std::max<size_t>(1, table.size())));
}

namespace {

// The command buffers of one chain, counting down to the last completion.
class ChainCompletion {
 public:
  ChainCompletion(uint32_t parts, Completion onCompleted) : remaining_(parts), onCompleted_(std::move(onCompleted)) {}

  // One part ended (with its error, or ""); the last one reports.
  void partEnded(const std::string& error, uint32_t parts = 1) {
    std::string report;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (firstError_.empty()) firstError_ = error;
      remaining_ -= parts;
      if (remaining_ > 0) return;
      report = firstError_;
    }
    onCompleted_(report);
  }

 private:
  std::mutex mutex_;
  uint32_t remaining_;
  std::string firstError_;
  Completion onCompleted_;
};

}  // namespace

void commitChain(Device& device, const DispatchTable& table, uint32_t start, uint32_t n, Completion onCompleted) {
  checkChain(table, start, n);
  const uint32_t steps = chainStepsPerCommandBuffer(table);
  const uint32_t parts = n == 0 ? 1 : (n + steps - 1) / steps;
  // One count per part, and one held here until every part is committed.
  auto chain = std::make_shared<ChainCompletion>(parts + 1, std::move(onCompleted));
  uint32_t committed = 0;
  for (uint32_t done = 0; committed < parts; ++committed, done += steps) {
    try {
      auto commands = device.newCommandBuffer();
      encodeSteps(*commands, table, start + done, std::min(steps, n - done));  // checked above, whole
      commands->commit([chain](const std::string& error) { chain->partEnded(error); });
    } catch (const std::exception& e) {
      if (committed == 0) throw;  // nothing runs: the caller hears it now
      chain->partEnded(e.what(), parts - committed);
      break;
    }
  }
  chain->partEnded("");
}

}  // namespace md
