import assert from "node:assert/strict";
import { emitSandboxSources, portableNpmPaths, sandboxModule } from "./sandbox_emitter.ts";

Deno.test("portableNpmPaths: npm modules named the same on every machine", () => {
  const cases = [
    {
      name: "relative cache path",
      given: `// ../../root/.cache/deno/npm/registry.npmjs.org/valibot/1.5.0/dist/index.js`,
      want: `// npm:valibot/1.5.0/dist/index.js`,
    },
    {
      name: "absolute cache path, twice",
      given:
        `"/home/me/.cache/deno/npm/registry.npmjs.org/a/1/x.js" "/c/npm/registry.npmjs.org/b/2/y.js"`,
      want: `"npm:a/1/x.js" "npm:b/2/y.js"`,
    },
    {
      name: "nothing to change",
      given: `const x = "npm:valibot";`,
      want: `const x = "npm:valibot";`,
    },
  ];
  for (const { name, given, want } of cases) assert.equal(portableNpmPaths(given), want, name);
});

Deno.test("sandboxModule: both sources as string constants", () => {
  const cases = [
    {
      name: "plain",
      given: ["host()", "worker()"],
      want: [
        `export const HOST_SOURCE: string = "host()";`,
        `export const WORKER_SOURCE: string = "worker()";`,
      ],
    },
    {
      name: "quotes and newlines",
      given: [`a("x")\n`, "b"],
      want: [`export const HOST_SOURCE: string = "a(\\"x\\")\\n";`],
    },
  ];
  for (const { name, given, want } of cases) {
    const source = sandboxModule(given[0], given[1]);
    for (const part of want) assert.ok(source.includes(part), `${name}: ${part}`);
  }
});

Deno.test({
  name: "emitSandboxSources: the two modules, bundled",
  ignore: (await Deno.permissions.query({ name: "run" })).state !== "granted",
  fn: async () => {
    const source = await emitSandboxSources();
    assert.match(source, /export const HOST_SOURCE: string = "/);
    assert.match(source, /export const WORKER_SOURCE: string = "/);
    assert.doesNotMatch(source, /registry\.npmjs\.org\//);
  },
});
