// output.ts: where a command writes (process.stdout, or a test's buffer).
export interface Output {
  write(text: string): void;
  isTTY?: boolean;
}
