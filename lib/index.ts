// metal-decode's public API.
export { sample, sampleAsync } from './sample.js';
export { getBackends, selectBackend, type BackendInfo, type BackendName } from './backends.js';
export {
  SAMPLING_DEFAULTS,
  type BackendChoice,
  type FilterTemperature,
  type RepeatPenaltyOptions,
  type LogitBias,
  type SampleOptions,
} from './sampling-options.js';
export { TokenBias, type TokenBiasValue } from './token-bias.js';
export { AbortError, BackendUnavailableError, NoTokenError, SessionBusyError } from './errors.js';
export { float16FromNumber, numberFromFloat16, toFloat16Array } from './float16.js';
export { DispatchTable, GpuBuffer, GpuDevice, openDevice, openDeviceAsync, type GpuDeviceKind } from './gpu/device.js';
export { DispatchTableBuilder, type BufferBindingSpec, type CommandSpec, type PatchSpec } from './gpu/dispatch-table.js';
export { ChainRunner, type ChainChunk, type ChainOptions } from './gpu/chain.js';
export { BigramModel, BIGRAM_TENSORS, type BigramSeedOptions } from './models/bigram.js';
export { BigramChain, type BigramChainOptions, type ChainSamplingOptions } from './models/bigram-gpu.js';
export { decodeBigramOnCpu, type CpuDecodeOptions } from './models/bigram-cpu.js';
export { SafetensorsError } from './models/safetensors.js';
export { generate, Session, type Prompt, type SessionOptions } from './generate/session.js';
export { Generation } from './generate/generation.js';
export type { GenerateOptions, GeneratedToken, MaskState, OneShotGenerateOptions, TokenMask } from './generate/generate-options.js';
export type { DecodePath, GenerationResult, GenerationStats, StopReason } from './generate/decode-loop.js';
export type { MaskStats } from './generate/constraint.js';
export type { SpeculativeOptions, SpeculativeStats } from './generate/speculative.js';
export type { DecodeModel, Logits, ModelSequence, SequenceChain, Tokenizer } from './generate/model.js';
export { ByteTokenizer } from './generate/byte-tokenizer.js';
export type { Vocabulary } from './generate/vocabulary.js';
export { LogitsModel, type LogitsFunction, type LogitsModelOptions } from './models/logits-model.js';
export { TEXT_EOS, type TextBigramOptions } from './models/bigram-text.js';
export { loadModel, type LoadModelOptions } from './gguf/load-model.js';
export { GgufModel, type GgufModelInfo } from './models/gguf-model.js';
export { GgufError } from './gguf/gguf-error.js';
export { GgufTokenizer, type DecodeOptions, type EncodeOptions } from './gguf/gguf-tokenizer.js';
export { createGrammar, createGrammarForJsonSchema, Grammar, type CreateGrammarOptions } from './grammar/grammar.js';
export type { GrammarSpec, JsonSchema } from './grammar/grammar-spec.js';
export { GrammarError } from './grammar/grammar-error.js';
export { ChatTemplate, type ChatMessage, type ChatToolCall, type RenderOptions } from './tokenizers/chat-template.js';
export { ChatSession, type ChatModel, type ChatPromptOptions, type ChatPromptResult, type ChatSessionOptions } from './chat/chat-session.js';
export { defineChatSessionFunction, type ChatSessionFunction, type ChatSessionFunctions } from './chat/chat-functions.js';
export type { FunctionCallItem } from './chat/function-calls.js';
export type { ChatContextShiftOptions, ChatContextShiftStrategy, ChatContextShiftStrategyOptions } from './chat/context-window.js';
export type { ContextShiftOptions } from './generate/context-shift.js';
export type { SchemaType } from './grammar/schema-type.js';
export { defaultModelsDirectory, resolveModelFile, type DownloadProgress, type ResolveModelFileOptions } from './models/resolve-model-file.js';
export type { ResponseChunk, ThoughtSegment } from './chat/thought-segments.js';
export { Embedding, EmbeddingContext, type EmbeddingPooling } from './models/embedding-context.js';
export type { ChatTokenizer } from './chat/chat-tokenizer.js';
export type { ChatHistoryInput, NodeLlamaCppHistoryItem } from './chat/chat-history.js';
export { createServer, OpenAiServer, type ServedModel, type ServerOptions } from './server/openai-server.js';
