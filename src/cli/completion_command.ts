/**
 * `edgenode completion bash|zsh|fish`: a shell script that completes the commands, their
 * subcommands and each one's flags. It is made from the one command table (src/main.ts) and
 * each command's help (command_words.ts), so a command added there completes without more.
 * File names complete where no word of ours fits (a model file, a deploy directory).
 *
 * @module
 */
import { ConfigError } from "../config/config_error.ts";
import type { Command } from "./command.ts";
import { commandWords } from "./command_words.ts";

/** A command's words for the scripts: its name, subcommands and flags by subcommand. */
interface Entry {
  name: string;
  subcommands: readonly string[];
  flags: ReadonlyMap<string, readonly string[]>;
}

/** The commands users type (those with help), with their aliases' words left out. */
function entries(commands: readonly Command[]): Entry[] {
  return commands.filter((command) => command.help).map((command) => ({
    name: command.name,
    ...commandWords(command),
  }));
}

/** The flags of a command where no subcommand is given. */
function ownFlags(entry: Entry): readonly string[] {
  return entry.flags.get("") ?? [];
}

/** bash: `_edgenode` fills COMPREPLY from the words that fit where the cursor is. */
export function bashScript(commands: readonly Command[]): string {
  const cases = entries(commands).map((entry) => {
    const subs = entry.subcommands.map((sub) =>
      `          ${sub}) words="${entry.flags.get(sub)?.join(" ")}" ;;`
    );
    const own = ownFlags(entry).join(" ");
    return `      ${entry.name})
        if [[ $COMP_CWORD -eq 2 ]]; then words="${[...entry.subcommands, own].join(" ").trim()}"
        else case "\${COMP_WORDS[2]}" in
${[...subs, `          *) words="${own}" ;;`].join("\n")}
        esac; fi ;;`;
  });
  return `# bash completion for edgenode: source <(edgenode completion bash)
_edgenode() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" words=""
  if [[ $COMP_CWORD -eq 1 ]]; then
    words="${entries(commands).map((entry) => entry.name).join(" ")}"
  else
    case "\${COMP_WORDS[1]}" in
${cases.join("\n")}
    esac
  fi
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _edgenode edgenode
`;
}

/** zsh: a completion function, autoloaded from $fpath or sourced after compinit. */
export function zshScript(commands: readonly Command[]): string {
  const quoted = (words: readonly string[]) => words.map((word) => `'${word}'`).join(" ");
  const cases = entries(commands).map((entry) => {
    const subs = entry.subcommands.map((sub) =>
      `          ${sub}) choices=(${quoted(entry.flags.get(sub) ?? [])}) ;;`
    );
    const own = quoted(ownFlags(entry));
    return `      ${entry.name})
        if (( CURRENT == 3 )); then choices=(${quoted(entry.subcommands)} ${own})
        else case $words[3] in
${[...subs, `          *) choices=(${own}) ;;`].join("\n")}
        esac; fi ;;`;
  });
  return `#compdef edgenode
# zsh completion for edgenode: edgenode completion zsh > "\${fpath[1]}/_edgenode"
_edgenode() {
  local -a choices
  if (( CURRENT == 2 )); then
    choices=(${quoted(entries(commands).map((entry) => entry.name))})
  else
    case $words[2] in
${cases.join("\n")}
    esac
  fi
  compadd -a choices
  [[ $PREFIX == -* ]] || _files
}
if [[ "\${funcstack[1]}" == "_edgenode" ]]; then
  _edgenode "$@"
else
  compdef _edgenode edgenode
fi
`;
}

/** fish: one `complete` line per command, subcommand and flag. */
export function fishScript(commands: readonly Command[]): string {
  const all = entries(commands);
  const lines = [
    "# fish completion for edgenode: edgenode completion fish > ~/.config/fish/completions/edgenode.fish",
    `complete -c edgenode -n __fish_use_subcommand -a '${all.map((e) => e.name).join(" ")}'`,
  ];
  const option = (flag: string) => flag.startsWith("--") ? `-l ${flag.slice(2)}` : `-s ${flag[1]}`;
  for (const entry of all) {
    const seen = `__fish_seen_subcommand_from ${entry.name}`;
    if (entry.subcommands.length > 0) {
      const subs = entry.subcommands.join(" ");
      lines.push(
        `complete -c edgenode -n '${seen}; and not __fish_seen_subcommand_from ${subs}' -a '${subs}'`,
      );
    }
    for (const [sub, flags] of entry.flags) {
      const where = sub ? `${seen}; and __fish_seen_subcommand_from ${sub}` : seen;
      for (const flag of flags) lines.push(`complete -c edgenode -n '${where}' ${option(flag)}`);
    }
  }
  return `${lines.join("\n")}\n`;
}

const SCRIPTS = { bash: bashScript, zsh: zshScript, fish: fishScript } as const;

/** `edgenode completion bash|zsh|fish`, completing the commands `commands()` lists. */
export function completionCommand(commands: () => readonly Command[]): Command {
  return {
    name: "completion",
    help: `  edgenode completion bash|zsh|fish
      Prints a script that completes edgenode's commands, subcommands and flags in that shell.
      bash: source <(edgenode completion bash) in ~/.bashrc; zsh: edgenode completion zsh >
      "\${fpath[1]}/_edgenode"; fish: edgenode completion fish >
      ~/.config/fish/completions/edgenode.fish.`,
    local: true,
    run: (args) => {
      const shell = args[0] as keyof typeof SCRIPTS;
      if (args.length !== 1 || !Object.hasOwn(SCRIPTS, shell)) {
        throw new ConfigError("usage: edgenode completion bash|zsh|fish");
      }
      console.log(SCRIPTS[shell](commands()).trimEnd());
      return Promise.resolve(0);
    },
  };
}
