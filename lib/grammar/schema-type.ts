// schema-type.ts: the TypeScript type of the JSON a schema allows, for
// schemas written as literals (`as const` or a const type parameter):
// what grammar.parse() returns and what a chat function's handler gets,
// as node-llama-cpp's GbnfJsonSchemaToType gives them. Keywords it does
// not know give `unknown`, never a wrong type.

type Required<S> = S extends { required: readonly (infer R)[] } ? R : never;

type ObjectType<P, R> = { -readonly [K in keyof P as K extends R ? K : never]: SchemaType<P[K]> } & {
  -readonly [K in keyof P as K extends R ? never : K]?: SchemaType<P[K]>;
};

type Flatten<T> = { [K in keyof T]: T[K] } & {};

type ByType<S, T> = T extends 'string'
  ? string
  : T extends 'number' | 'integer'
    ? number
    : T extends 'boolean'
      ? boolean
      : T extends 'null'
        ? null
        : T extends 'array'
          ? S extends { items: infer I }
            ? SchemaType<I>[]
            : unknown[]
          : T extends 'object'
            ? S extends { properties: infer P }
              ? Flatten<ObjectType<P, Required<S>>>
              : Record<string, unknown>
            : unknown;

/** The type of the values schema S allows. */
export type SchemaType<S> = S extends { const: infer C }
  ? C
  : S extends { enum: readonly (infer E)[] }
    ? E
    : S extends { anyOf: readonly (infer A)[] }
      ? SchemaType<A>
      : S extends { oneOf: readonly (infer A)[] }
        ? SchemaType<A>
        : S extends { type: readonly (infer T)[] }
          ? ByType<S, T>
          : S extends { type: infer T }
            ? ByType<S, T>
            : unknown;
