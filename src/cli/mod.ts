/**
 * The client commands of `edgenode`: models, account, nodes, images, deployments, containers and
 * the local issuer, each on the SDK, and serve and hub (given their launchers); each module exports
 * its commands as data (command.ts), and command_line.ts makes dispatch and help from the table
 * main.ts lists; and the context they share (the node they talk to, output).
 *
 * @module
 */
export * from "./account_commands.ts";
export * from "./cli_context.ts";
export * from "./command.ts";
export * from "./command_line.ts";
export * from "./completion_command.ts";
export * from "./container_commands.ts";
export * from "./container_logs.ts";
export * from "./deploy_command.ts";
export * from "./image_commands.ts";
export * from "./issuer_commands.ts";
export * from "./models_commands.ts";
export * from "./node_commands.ts";
export * from "./nodes.ts";
export * from "./output.ts";
export * from "./ps_command.ts";
export * from "./pull_command.ts";
export * from "./run_command.ts";
export * from "./server_commands.ts";
export * from "./status_command.ts";
export * from "./version_command.ts";
