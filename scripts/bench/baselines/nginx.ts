/**
 * nginx as the benchmark's HTTP upload baseline: Debian's nginx-light (its WebDAV module takes
 * `PUT`), started by the bench with a configuration of its own in a temporary folder, on a free
 * port of 127.0.0.1, as the user running the bench. nginx writes the body to a temporary file
 * and renames it into place, without syncing: the receive path at its fastest.
 *
 * @module
 */

/** A running nginx: where it takes PUTs, and how to stop it. */
export interface NginxDav extends AsyncDisposable {
  /** `http://127.0.0.1:<port>` */
  url: string;
}

const NGINX = "/usr/sbin/nginx";

function config(dir: string, port: number): string {
  return `daemon off;
master_process off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log;
events { worker_connections 64; }
http {
  access_log off;
  # Every temporary folder in ours: the ones built in (/var/lib/nginx/...) may not exist, as on a
  # machine where the package's own setup did not run (a prepared bench folder).
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  server {
    listen 127.0.0.1:${port};
    root ${dir}/root;
    client_max_body_size 0;
    location / { dav_methods PUT; create_full_put_path on; }
  }
}
`;
}

/** Starts nginx over `dir`; undefined, with the reason printed, when it is not installed. */
export async function startNginxDav(dir: string): Promise<NginxDav | undefined> {
  if (!(await Deno.stat(NGINX).then(() => true, () => false))) {
    console.error("bench: no nginx WebDAV baseline (apt-get install -y nginx-light)");
    return undefined;
  }
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = listener.addr.port;
  listener.close();
  await Deno.mkdir(`${dir}/root`, { recursive: true });
  await Deno.writeTextFile(`${dir}/nginx.conf`, config(dir, port));
  const child = new Deno.Command(NGINX, {
    args: ["-c", `${dir}/nginx.conf`, "-p", dir, "-e", `${dir}/error.log`],
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    try {
      child.kill("SIGQUIT");
    } catch { /* exited */ }
    await child.status;
    await child.stderr.cancel().catch(() => {});
  };
  for (let i = 0; i < 100; i++) {
    const answered = await fetch(`${url}/`).then(async (r) => {
      await r.body?.cancel();
      return true;
    }, () => false);
    if (answered) return { url, [Symbol.asyncDispose]: stop };
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await stop();
  console.error(`bench: nginx did not start: ${await Deno.readTextFile(`${dir}/error.log`)}`);
  return undefined;
}
