/**
 * The baseline for `deno task bench`: a bare Deno.serve doing what the registry does at its
 * simplest, with no routing, validation, hashing or database; also the source of the download
 * benchmark (`/file`, `/file?name=small`). Usage:
 * `deno run ... baseline_server.ts <dir> <list.json>`; prints its port.
 *
 * @module
 */
const [dir, listFile] = Deno.args;
const list = JSON.parse(await Deno.readTextFile(listFile));
const model = list.data[0];

Deno.serve(
  { hostname: "127.0.0.1", port: 0, onListen: ({ port }) => console.log(`port ${port}`) },
  async (request) => {
    const { pathname } = new URL(request.url);
    if (pathname === "/upload") {
      const file = await Deno.open(`${dir}/baseline-upload.bin`, {
        write: true,
        create: true,
        truncate: true,
      });
      await request.body!.pipeTo(file.writable);
      return Response.json({ ok: true });
    }
    if (pathname === "/file") {
      // The bench's own files only: big.gguf (default) or small.gguf.
      const name = new URL(request.url).searchParams.get("name") === "small" ? "small" : "big";
      const file = await Deno.open(`${dir}/${name}.gguf`);
      return new Response(file.readable, {
        headers: { "Content-Length": String((await file.stat()).size) },
      });
    }
    if (pathname === "/list") return Response.json(list);
    if (pathname === "/one") return Response.json(model);
    return new Response("not found", { status: 404 });
  },
);
