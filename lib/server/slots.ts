// slots.ts: the server's `parallel` slots. Each holds one sequence (a KV
// cache of the slot's share of the context): a ChatSession, which keeps
// its conversation for the next chat request that lands on the slot, or a
// Session for completions. A slot that changes kind frees the other, so
// the server never holds more than `parallel` sequences, all of which the
// model checked fit before the server served (checkSequencesFit).
import { ChatSession, type ChatModel } from '../chat/chat-session.js';
import { Session } from '../generate/session.js';
import type { BackendChoice } from '../sampling-options.js';

interface Slot {
  busy: boolean;
  chat?: ChatSession;
  plain?: Session;
}

export class ServerSlots {
  readonly #slots: Slot[];
  readonly #open: () => { backend?: BackendChoice; contextSize: number };
  readonly #model: ChatModel;

  constructor(model: ChatModel, parallel: number, backend: BackendChoice | undefined, contextSize: number) {
    this.#model = model;
    this.#slots = Array.from({ length: parallel }, () => ({ busy: false }));
    this.#open = () => ({ ...(backend !== undefined && { backend }), contextSize });
  }

  /** A free slot's chat session for the task (a slot that already holds one first: it may hold the same conversation). */
  withChat<T>(task: (chat: ChatSession) => Promise<T>): Promise<T> {
    return this.#withSlot('chat', (slot) => (slot.chat ??= new ChatSession(this.#model, this.#open())), task);
  }

  /** A free slot's plain session for the task (holding what the slot's last completion left: rewind it). */
  withSession<T>(task: (session: Session) => Promise<T>): Promise<T> {
    return this.#withSlot('plain', (slot) => (slot.plain ??= new Session(this.#model, this.#open())), task);
  }

  async dispose(): Promise<void> {
    for (const slot of this.#slots) {
      await slot.chat?.[Symbol.asyncDispose]();
      await slot.plain?.[Symbol.asyncDispose]();
    }
  }

  // The queue runs at most `parallel` tasks, so one slot is free.
  async #withSlot<S, T>(kind: 'chat' | 'plain', take: (slot: Slot) => S, task: (session: S) => Promise<T>): Promise<T> {
    const free = this.#slots.filter((s) => !s.busy);
    const slot = free.find((s) => s[kind] !== undefined) ?? free.find((s) => s.chat === undefined && s.plain === undefined) ?? free[0];
    if (slot === undefined) throw new Error('no free slot (the queue runs at most parallel requests)');
    slot.busy = true;
    try {
      const other = kind === 'chat' ? 'plain' : 'chat';
      if (slot[other] !== undefined) {
        await slot[other][Symbol.asyncDispose]();
        slot[other] = undefined;
      }
      return await task(take(slot));
    } finally {
      slot.busy = false;
    }
  }
}
