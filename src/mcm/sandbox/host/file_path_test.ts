import assert from "node:assert/strict";
import { fileUrlPath } from "./file_path.ts";

Deno.test("fileUrlPath decodes what a file URL escapes", () => {
  const path = "/tmp/edge node ünïcode/100%/#x?y/container_host.js";
  const url = new URL(
    `file://${path}`.replaceAll("%", "%25").replaceAll("#", "%23").replaceAll("?", "%3F"),
  );
  assert.equal(fileUrlPath(url), path);
  assert.equal(fileUrlPath(url.href), path);
  assert.equal(fileUrlPath("file:///C:/a%20b/c.js"), "C:\\a b\\c.js");
  assert.throws(() => fileUrlPath("blob:abc"), TypeError);
});
