// table_binding.h: dispatch tables in JS. device.createTable(commands)
// turns the plain objects lib/gpu/dispatch-table.ts builds (and has
// already validated, with friendlier messages) into a DispatchTable;
// device.runChain(table, start, n) encodes and commits a chain and resolves
// when the GPU is done, without blocking the event loop.
#pragma once
#include <napi.h>

#include <memory>

#include "../core/dispatch_table.h"
#include "device_binding.h"

namespace md::addon {

class TableHandle : public Napi::ObjectWrap<TableHandle>, public DeviceResource {
 public:
  static Napi::Function define(Napi::Env env);
  // createTable(commands) for `session`'s device; throws TypeError /
  // RangeError naming commands[i] and the field.
  static Napi::Object create(const Napi::CallbackInfo& info, std::shared_ptr<DeviceSession> session);
  // runChain(table, start, n) -> Promise<void>.
  static Napi::Value runChain(const Napi::CallbackInfo& info, std::shared_ptr<DeviceSession> session);

  explicit TableHandle(const Napi::CallbackInfo& info);
  ~TableHandle() override;
  // Lets go of the commands, their buffers and the device.
  void releaseDeviceResources() override;

 private:
  Napi::Value Size(const Napi::CallbackInfo& info);
  Napi::Value Labels(const Napi::CallbackInfo& info);
  // dispose(): lets go of the commands and the buffers they hold now.
  Napi::Value Dispose(const Napi::CallbackInfo& info);

  std::shared_ptr<DeviceSession> session_;  // the pipelines live in its device
  std::shared_ptr<DispatchTable> table_;
};

}  // namespace md::addon
