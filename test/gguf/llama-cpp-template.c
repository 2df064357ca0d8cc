/* llama-cpp-template.c: renders a chat with llama.cpp's own template
 * engine (llama_chat_apply_template in node-llama-cpp's prebuilt
 * libllama), for the tests to compare ChatTemplate's renderings with.
 *
 * usage: llama-cpp-template LIBLLAMA TEMPLATE_FILE ADD_ASSISTANT < messages
 * messages: role NUL content NUL, repeated. Prints the rendering, or exits
 * with 3 when llama.cpp does not recognise the template. */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { const char *role; const char *content; } chat_message;
typedef int32_t (*apply_fn)(const char *, const chat_message *, size_t, bool, char *, int32_t);

static char *read_all(FILE *f, size_t *size) {
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  size_t got;
  while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) buf = realloc(buf, cap *= 2);
  }
  if (buf) buf[n] = 0;  /* n < cap here */
  *size = n;
  return buf;
}

int main(int argc, char **argv) {
  if (argc != 4) return 2;
  void *lib = dlopen(argv[1], RTLD_NOW);
  if (!lib) { fprintf(stderr, "%s\n", dlerror()); return 2; }
  apply_fn apply = (apply_fn)dlsym(lib, "llama_chat_apply_template");
  if (!apply) return 2;
  FILE *t = fopen(argv[2], "rb");
  if (!t) return 2;
  size_t template_size, input_size;
  char *template = read_all(t, &template_size);
  fclose(t);
  char *input = read_all(stdin, &input_size);
  if (!template || !input) return 2;

  chat_message messages[256];
  size_t count = 0;
  for (size_t at = 0; at < input_size && count < 256;) {
    messages[count].role = input + at;
    at += strlen(input + at) + 1;
    messages[count].content = input + at;
    at += strlen(input + at) + 1;
    count++;
  }
  int32_t length = 1 << 20;
  char *out = malloc(length);
  int32_t n = apply(template, messages, count, argv[3][0] == '1', out, length);
  if (n < 0) return 3;
  if (n > length) return 2;
  fwrite(out, 1, n, stdout);
  return 0;
}
