//! The README cannot rot: every `emq …` line of its code blocks runs, in
//! order, on a real server, on each wire, and exits as its comment says
//! (0, unless the comment says `exits N`).
//!
//! Lines that serve until Ctrl-C (`server`, `worker`, `watch`, `metrics
//! --listen`, `serve`, `dashboard`) are started, seen at work, then stopped with
//! SIGINT, and must exit 0. Three changes to the lines as written, each
//! for a reason:
//! - `emq server` gets `--port 0`, and the listeners port 0: 6379, 7070
//!   and 9464 may be taken on the machine that runs the tests;
//! - `emq bench` lines get `--jobs 10`: the README's sizes take minutes;
//! - `emq bench --dashboard N` is parsed, not run: its search queue holds
//!   100,000 jobs whatever N is.
//!
//! The examples every command's `--help` ends with are parsed by `emq`'s
//! own parser, and each is one of the lines run here.

use crate::common::readme::{Line, emq_lines, shell_words};
use crate::common::{self, PATIENCE, Run, command, http_get, spawn_command, stats};
use clap::Parser;
use echomq_testkit::{ServerBinary, TestServer, module_path, wait_until};
use std::path::PathBuf;
use std::process::Command;

#[test]
fn every_readme_line_exits_as_its_comment_says_on_wire_4() {
    walk("script");
}

#[test]
fn every_readme_line_exits_as_its_comment_says_on_wire_6() {
    walk("native");
}

#[test]
fn every_help_example_parses_and_is_a_readme_line() {
    let readme: Vec<String> = emq_lines().iter().map(|line| line.args.join(" ")).collect();
    let mut shown = Vec::new();
    for path in command_paths(&emq::cli::command(), &[]) {
        let help = common::emq(&[&path[..], &["--help"]].concat());
        assert_eq!(help.code, 0, "emq {path:?} --help: {}", help.stderr);
        for example in help_examples(&help.stdout) {
            let words = shell_words(&example);
            if let Err(err) = emq::cli::command().try_get_matches_from(&words) {
                panic!("emq {path:?} --help shows `{example}`, which does not parse: {err}");
            }
            let args = words[1..].join(" ");
            assert!(readme.contains(&args), "`{example}` is not a README line");
            shown.push(args);
        }
    }
    for line in &readme {
        assert!(shown.contains(line), "no --help shows `emq {line}`");
    }
}

/// The path of every command below `command` (which is at `path`).
fn command_paths<'a>(command: &'a clap::Command, path: &[&'a str]) -> Vec<Vec<&'a str>> {
    let mut paths = Vec::new();
    for sub in command.get_subcommands() {
        let below = [path, &[sub.get_name()]].concat();
        paths.extend(command_paths(sub, &below));
        paths.push(below);
    }
    paths
}

/// The command lines under a help's `Examples:` heading, comments dropped.
fn help_examples(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| *line != "Examples:")
        .filter_map(|line| line.strip_prefix("  emq "))
        .map(|line| format!("emq {}", line.split("  #").next().unwrap()))
        .collect()
}

/// Runs every README line on a fresh server (the module loaded, so that
/// `bench --compare` finds wire 6) with `--wire wire`.
fn walk(wire: &str) {
    let server =
        TestServer::with_config(ServerBinary::locate().unwrap(), false, vec![module_path()]);
    let walk = Walk {
        dir: scratch_dir(wire),
        url: server.url(),
        wire: wire.to_string(),
        server,
    };
    let lines = emq_lines();
    assert!(
        lines.len() > 40,
        "only {} emq lines in README.md",
        lines.len()
    );
    for line in &lines {
        let (code, output) = walk.run(line);
        assert_eq!(
            code,
            line.expected_exit(),
            "wire {wire}: `{}` exited {code}\n{output}",
            line.text
        );
    }
    std::fs::remove_dir_all(&walk.dir).unwrap();
}

/// A temporary working directory holding the README's `./send.sh`.
fn scratch_dir(wire: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("emq-readme-{}-{wire}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("send.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\ncat >/dev/null\necho '{\"sent\":true}'\n",
    )
    .unwrap();
    let status = Command::new("chmod")
        .arg("+x")
        .arg(&script)
        .status()
        .unwrap();
    assert!(status.success());
    dir
}

/// The README's lines on one server and wire.
struct Walk {
    dir: PathBuf,
    url: String,
    wire: String,
    server: TestServer,
}

impl Walk {
    /// Runs `line` the way its command is used; its exit code and output.
    fn run(&self, line: &Line) -> (i32, String) {
        let args: Vec<&str> = line.args.iter().map(String::as_str).collect();
        match args[0] {
            "server" => self.serve(&[&args[..], &["--port", "0"]].concat()),
            "dashboard" | "serve" => {
                self.listen(&[&args[..], &["--listen", "127.0.0.1:0"]].concat())
            }
            "metrics" if line.has("--listen") => self.listen(&on_port_0(&args)),
            "worker" => self.work(&args),
            "watch" => self.watch(&args),
            "bench" if line.has("--dashboard") => parse_only(&args),
            "bench" => finished(self.to_end(&[&args[..], &["--jobs", "10"]].concat())),
            _ => finished(self.to_end(&args)),
        }
    }

    /// `emq args… --wire <wire>` in the scratch directory, on the server.
    fn command(&self, args: &[&str]) -> Command {
        let mut emq = command(args);
        emq.args(["--wire", &self.wire])
            .current_dir(&self.dir)
            .env("EMQ_URL", &self.url);
        emq
    }

    fn to_end(&self, args: &[&str]) -> Run {
        common::run_to_end(self.command(args))
    }

    /// `emq server`: its `export EMQ_URL=…` names a server that answers.
    fn serve(&self, args: &[&str]) -> (i32, String) {
        let mut server = spawn_command(self.command(args));
        let export = wait_line(&mut server, "export EMQ_URL=");
        let url = export.split("EMQ_URL=").nth(1).unwrap();
        let url = url.split_whitespace().next().unwrap();
        let queues = common::emq(&["--url", url, "queues"]);
        assert_eq!(queues.code, 0, "`emq server` at {url}: {}", queues.stderr);
        interrupt(server, export)
    }

    /// A listener: the first line names its URL, which answers 200.
    fn listen(&self, args: &[&str]) -> (i32, String) {
        let mut listener = spawn_command(self.command(args));
        let first = listener.next_line();
        let url = first
            .split_whitespace()
            .find_map(|word| word.strip_prefix("http://"))
            .unwrap_or_else(|| panic!("no http:// URL in the first line: {first}"));
        let (addr, path) = match url.split_once('/') {
            Some((addr, path)) => (addr.to_string(), format!("/{path}")),
            None => (url.to_string(), "/".to_string()),
        };
        let (head, _) = http_get(&addr, &path);
        assert!(head.starts_with("HTTP/1.1 200"), "GET {url}: {head}");
        interrupt(listener, first)
    }

    /// `emq worker`: runs until its queues (one, or a comma-separated
    /// list) have nothing pending or active.
    fn work(&self, args: &[&str]) -> (i32, String) {
        let worker = spawn_command(self.command(args));
        wait_until("the worker to empty its queues", PATIENCE, || {
            args[1].split(',').all(|queue| {
                let stats = stats(&self.server, queue);
                stats["pending"] == 0 && stats["active"] == 0
            })
        });
        interrupt(worker, String::new())
    }

    /// `emq watch`: a job enqueued once it watches shows as a line.
    fn watch(&self, args: &[&str]) -> (i32, String) {
        let mut watch = spawn_command(self.command(args));
        watch.wait_stderr("watching");
        let enqueued = self.to_end(&["enqueue", args[1], "{}"]);
        assert_eq!(enqueued.code, 0, "{}", enqueued.stderr);
        let line = watch.next_line();
        interrupt(watch, line)
    }
}

/// `args` with the value of `--listen` on port 0.
fn on_port_0<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let mut args = args.to_vec();
    let at = args.iter().position(|arg| *arg == "--listen").unwrap();
    args[at + 1] = "127.0.0.1:0";
    args
}

/// Stops `spawned` with SIGINT: its exit code, and what it printed.
fn interrupt(mut spawned: common::Spawned, seen: String) -> (i32, String) {
    spawned.signal("INT");
    let status = spawned.wait_exit();
    let output = format!("{seen}\nstderr: {:?}", spawned.drain_stderr());
    (status.code().unwrap_or(-1), output)
}

/// Waits for a stdout line of `spawned` containing `needle`.
fn wait_line(spawned: &mut common::Spawned, needle: &str) -> String {
    loop {
        let line = spawned.next_line();
        if line.contains(needle) {
            return line;
        }
    }
}

fn finished(run: Run) -> (i32, String) {
    let output = format!("stdout: {}\nstderr: {}", run.stdout, run.stderr);
    (run.code, output)
}

/// Exit 0 when `emq`'s parser takes `args`, 2 (with clap's message) when not.
fn parse_only(args: &[&str]) -> (i32, String) {
    match emq::cli::Cli::try_parse_from([&["emq"], args].concat()) {
        Ok(_) => (0, String::new()),
        Err(err) => (2, err.to_string()),
    }
}
