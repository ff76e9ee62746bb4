import assert from "node:assert/strict";
import { emitMethods } from "./methods_emitter.ts";

Deno.test("emitMethods: parameters in positional order, results, errors, imports", () => {
  const cases = [
    {
      name: "parameters by reference and inline, a result by reference",
      given: {
        methods: [{
          name: "join",
          params: [
            { name: "token", required: true, schema: { $ref: "#/components/schemas/Jwt" } },
            { name: "note", schema: { type: "string" } },
          ],
          result: { schema: { $ref: "#/components/schemas/Me" } },
        }],
      },
      want: [
        `import * as v from "valibot";`,
        `import { JwtSchema, MeSchema } from "./validators.ts";`,
        `  join: {\n    params: [{ name: "token", required: true, schema: JwtSchema }, { name: "note", required: false, schema: v.string("must be a string") }],\n    result: MeSchema,\n  },`,
      ],
    },
    {
      name: "a result of common.yaml, through the service's validators",
      given: {
        methods: [{
          name: "ping",
          params: [],
          result: { schema: { $ref: "common.yaml#/components/schemas/Status" } },
        }],
      },
      want: [`import { StatusSchema } from "./validators.ts";`, `    result: StatusSchema,`],
    },
    {
      name: "application errors",
      given: {
        methods: [],
        components: { errors: { NoAccount: { code: -32001, message: "no account" } } },
      },
      want: [`  NoAccount: { code: -32001, message: "no account" },`],
    },
  ];
  for (const { name, given, want } of cases) {
    const source = emitMethods(given, "rpc", "spec/rpc.yaml");
    for (const part of want) assert.ok(source.includes(part), `${name}: ${part}\n${source}`);
    if (!source.includes("v.")) assert.doesNotMatch(source, /from "valibot"/, name);
  }
});
