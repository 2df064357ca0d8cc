// metal-decode's public API.
export { sample, sampleAsync } from './sample.js';
export { getBackends, selectBackend, type BackendInfo, type BackendName } from './backends.js';
export {
  SAMPLING_DEFAULTS,
  type BackendChoice,
  type FilterTemperature,
  type RepeatPenaltyOptions,
  type SampleOptions,
  type TokenBias,
} from './sampling-options.js';
export { BackendUnavailableError, NoTokenError } from './errors.js';
export { float16FromNumber, numberFromFloat16, toFloat16Array } from './float16.js';
