/**
 * A stand-in for the Hugging Face Hub on a free port of 127.0.0.1, answering the shapes of the
 * Hub's documented API that `edgenode pull hf.co/...` uses: `GET /api/models/{user}/{repo}`
 * (or `.../revision/{revision}`, every revision the same files here) with
 * its `siblings` (`rfilename`, and `size` as `?blobs=true` gives it; 404 with an `error` for an
 * unknown repository), and the files under `/{user}/{repo}/resolve/{revision}/{file}` (as a
 * redirect to `/cdn/...`, the way the Hub sends its files from a content store). Point
 * the CLI at it with `HF_ENDPOINT`.
 *
 * @example
 * ```ts
 * import { startHfHub } from "./hf_hub.ts";
 * import { tinyLlamaGguf } from "./tiny_llama.ts";
 *
 * await using hub = startHfHub();
 * hub.repository("test/tiny", { "tiny-Q4_K_M.gguf": tinyLlamaGguf() });
 * // HF_ENDPOINT=hub.url edgenode pull hf.co/test/tiny:Q4_K_M
 * ```
 *
 * @module
 */

/** The running stand-in. */
export interface HfHub extends AsyncDisposable {
  /** `http://127.0.0.1:<port>`, the value of HF_ENDPOINT. */
  url: string;
  /** Adds repository `id` ("user/repo") with these files (path in the repository: bytes). */
  repository(id: string, files: Record<string, Uint8Array>): void;
  /** The paths asked for so far, oldest first. */
  requests: string[];
}

/** Starts the stand-in Hub. */
export function startHfHub(): HfHub {
  const repositories = new Map<string, Map<string, Uint8Array>>();
  const requests: string[] = [];
  const http = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    const path = decodeURIComponent(new URL(request.url).pathname);
    requests.push(path);
    const api = /^\/api\/models\/([^/]+\/[^/]+)(?:\/revision\/[^/]+)?$/.exec(path);
    if (api) {
      const files = repositories.get(api[1]);
      if (!files) return Response.json({ error: "Repository not found" }, { status: 404 });
      const siblings = [...files].map(([rfilename, bytes]) => ({
        rfilename,
        size: bytes.byteLength,
      }));
      return Response.json({ id: api[1], modelId: api[1], sha: "0".repeat(40), siblings });
    }
    // The Hub answers a file with a redirect to its content store; so does this one.
    const resolve = /^\/([^/]+\/[^/]+)\/resolve\/[^/]+\/(.+)$/.exec(path);
    if (resolve && repositories.get(resolve[1])?.has(resolve[2])) {
      const location = `/cdn/${resolve[1]}/${
        resolve[2].split("/").map(encodeURIComponent).join("/")
      }`;
      return new Response(null, { status: 302, headers: { location } });
    }
    const file = /^\/cdn\/([^/]+\/[^/]+)\/(.+)$/.exec(path);
    const bytes = file && repositories.get(file[1])?.get(file[2]);
    if (!bytes) return new Response("Entry not found", { status: 404 });
    return new Response(bytes as Uint8Array<ArrayBuffer>, {
      headers: {
        "content-type": "application/octet-stream",
        "content-length": String(bytes.byteLength),
      },
    });
  });
  return {
    url: `http://127.0.0.1:${(http.addr as Deno.NetAddr).port}`,
    repository(id, files) {
      repositories.set(id, new Map(Object.entries(files)));
    },
    requests,
    async [Symbol.asyncDispose]() {
      await http.shutdown();
    },
  };
}
