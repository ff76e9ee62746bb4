# workerd's config for the baseline of `deno task bench --only requests`: one JS worker
# (workerd_hello.js) answering "hello" on every path. The bench sets the address with
# `workerd serve workerd_hello.capnp --socket-addr http=127.0.0.1:PORT`.
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [(name = "main", worker = .helloWorker)],
  sockets = [(name = "http", address = "127.0.0.1:8787", http = (), service = "main")],
);

const helloWorker :Workerd.Worker = (
  modules = [(name = "worker", esModule = embed "workerd_hello.js")],
  compatibilityDate = "2025-01-01",
);
