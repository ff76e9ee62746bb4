import assert from "node:assert/strict";
import { formParts, handleForm } from "./form_request.ts";

async function encoded(form: FormData): Promise<{ type: string; body: Uint8Array }> {
  // The web platform's own multipart encoder, not ours.
  const request = new Request("http://x/", { method: "POST", body: form });
  return {
    type: request.headers.get("content-type")!,
    body: new Uint8Array(await request.arrayBuffer()),
  };
}

Deno.test("formParts reads what Request encodes: fields, files, empty parts, CRLF in data", async () => {
  const form = new FormData();
  form.append("title", 'a "quoted" name');
  form.append("empty", "");
  const bytes = new Uint8Array([13, 10, 45, 45, 0, 255, 13, 10]);
  form.append("model", new File([bytes], "model.bin"));
  const { type, body } = await encoded(form);
  const parts = formParts(type, body);
  assert.deepEqual(parts.map((p) => [p.name, p.filename]), [
    ["title", undefined],
    ["empty", undefined],
    ["model", "model.bin"],
  ]);
  assert.equal(new TextDecoder().decode(parts[0].bytes), 'a "quoted" name');
  assert.equal(parts[1].bytes.length, 0);
  assert.deepEqual(parts[2].bytes, bytes);
});

Deno.test("handleForm stores, gets or skips each part as found() decides", async () => {
  const form = new FormData();
  form.append("keep", "yes");
  form.append("file", new File(["abc"], "a.txt"));
  form.append("other", new File(["zzz"], "b.txt"));
  const { type, body } = await encoded(form);
  const saved: [string, string][] = [];
  const seen: string[] = [];
  handleForm(formParts(type, body), {
    found: (key, filename) =>
      key === "file"
        ? { action: "store", path: `up-${filename}` }
        : key === "keep"
        ? { action: "get" }
        : { action: "skip" },
    get: (key, value) => seen.push(`get ${key}=${value}`),
    store: (path, size) => seen.push(`store ${path} ${size}`),
  }, (path, bytes) => saved.push([path, new TextDecoder().decode(bytes)]));
  assert.deepEqual(seen, ["get keep=yes", "store up-a.txt 3"]);
  assert.deepEqual(saved, [["up-a.txt", "abc"]]);
  assert.throws(() => formParts("application/json", body), /not multipart\/form-data/);
  assert.throws(() => formParts(type, body.subarray(0, body.length - 20)), /ends inside a part/);
});
