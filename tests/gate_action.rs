//! The GitHub Action (`action.yml`) run the way a runner runs a composite
//! action: each `run:` step through `bash --noprofile --norc -eo pipefail`
//! with the `GITHUB_*` files and variables a runner sets (GITHUB_OUTPUT and
//! GITHUB_STEP_SUMMARY per step, GITHUB_PATH, GITHUB_WORKSPACE,
//! GITHUB_EVENT_NAME, GITHUB_EVENT_PATH, GITHUB_BASE_REF, RUNNER_TEMP), the
//! `${{ }}` expressions of `env:`, `if:` and `with:` evaluated from the
//! inputs, the event and earlier steps' outputs. The install step installs
//! the wheel `.ci/run` built (LOCKLINT_WHEEL_DIR, offline: PIP_NO_INDEX).
//! `uses:` steps are not run; their resolved `with:` is checked.

mod gate_common;

use gate_common::{git, tools_required, wheel_dir, write, yaml_json, UNLOCK_LUA};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const GOOD_LUA: &str = "-- Releases the job lock if this caller still holds it.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
";

fn action() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("action.yml");
    yaml_json(&path).expect("action.yml parses (python3 with PyYAML)")
}

#[derive(Debug, Default)]
struct Step {
    name: String,
    ran: bool,
    code: i32,
    stdout: String,
    stderr: String,
    /// For `uses:` steps: the action and its resolved `with:`.
    uses: Option<(String, BTreeMap<String, String>)>,
}

#[derive(Debug)]
struct Run {
    /// The runner's temp folder (RUNNER_TEMP and the step files), kept for the checks.
    _temp: tempfile::TempDir,
    steps: Vec<Step>,
    failed: bool,
    outputs: BTreeMap<String, String>,
    summary: String,
    path_added: Vec<String>,
}

impl Run {
    fn step(&self, name: &str) -> &Step {
        self.steps
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no step {name}"))
    }
}

struct Runner<'a> {
    inputs: BTreeMap<String, String>,
    event: Value,
    env: BTreeMap<String, String>,
    outputs: BTreeMap<String, BTreeMap<String, String>>,
    workspace: &'a Path,
}

impl Runner<'_> {
    /// One expression as the action uses them; anything else fails the test,
    /// so the action cannot use syntax this emulation does not know.
    fn eval(&self, expr: &str) -> String {
        let e = expr.trim();
        let parts: Vec<&str> = e.split('.').collect();
        match parts.as_slice() {
            ["inputs", name] => self.inputs.get(*name).cloned().unwrap_or_default(),
            ["steps", id, "outputs", key] => self
                .outputs
                .get(*id)
                .and_then(|o| o.get(*key))
                .cloned()
                .unwrap_or_default(),
            ["github", "event", rest @ ..] => {
                let mut v = &self.event;
                for k in rest {
                    v = v.get(*k).unwrap_or(&Value::Null);
                }
                match v {
                    Value::String(s) => s.clone(),
                    Value::Null => String::new(),
                    other => other.to_string(),
                }
            }
            ["github", key] => {
                let var = format!("GITHUB_{}", key.to_uppercase());
                self.env.get(&var).cloned().unwrap_or_default()
            }
            _ => panic!("the test does not evaluate `{e}`"),
        }
    }

    fn subst(&self, text: &str) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(i) = rest.find("${{") {
            out.push_str(&rest[..i]);
            let end = rest[i..].find("}}").expect("closed ${{") + i;
            out.push_str(&self.eval(&rest[i + 3..end]));
            rest = &rest[end + 2..];
        }
        out.push_str(rest);
        out
    }

    /// `if:` conditions: `A == 'x'` and `A != 'x'` joined by `&&`.
    fn cond(&self, text: &str) -> bool {
        let t = text.trim();
        let t = t
            .strip_prefix("${{")
            .and_then(|t| t.strip_suffix("}}"))
            .unwrap_or(t);
        t.split("&&").all(|c| {
            let (lhs, rhs, eq) = match (c.split_once("=="), c.split_once("!=")) {
                (Some((l, r)), _) => (l, r, true),
                (None, Some((l, r))) => (l, r, false),
                _ => panic!("the test does not evaluate the condition `{c}`"),
            };
            let rhs = rhs.trim().trim_matches('\'');
            (self.eval(lhs) == rhs) == eq
        })
    }

    fn run(mut self, action: &Value, temp_dir: tempfile::TempDir) -> Run {
        let temp = temp_dir.path();
        let mut steps = Vec::new();
        let mut failed = false;
        let mut summary = String::new();
        let github_path = temp.join("github_path");
        std::fs::write(&github_path, "").unwrap();
        let list = action["runs"]["steps"].as_array().expect("steps");
        for (n, s) in list.iter().enumerate() {
            let name = s["name"].as_str().unwrap_or("?").to_string();
            let mut step = Step {
                name,
                ..Step::default()
            };
            let wanted = match s.get("if").and_then(Value::as_str) {
                Some(c) => self.cond(c),
                None => true,
            };
            if failed || !wanted {
                steps.push(step);
                continue;
            }
            step.ran = true;
            if let Some(uses) = s.get("uses").and_then(Value::as_str) {
                let with = s
                    .get("with")
                    .and_then(Value::as_object)
                    .map(|m| {
                        m.iter()
                            .map(|(k, v)| (k.clone(), self.subst(v.as_str().unwrap_or(""))))
                            .collect()
                    })
                    .unwrap_or_default();
                step.uses = Some((uses.to_string(), with));
                steps.push(step);
                continue;
            }
            assert_eq!(
                s["shell"].as_str(),
                Some("bash"),
                "every run step says shell: bash"
            );
            let script = s["run"].as_str().expect("run");
            assert!(
                !script.contains("${{"),
                "a run: script interpolates an expression (inject through env: instead)"
            );
            let script_path = temp.join(format!("step-{n}.sh"));
            std::fs::write(&script_path, script).unwrap();
            let out_file = temp.join(format!("output-{n}"));
            let sum_file = temp.join(format!("summary-{n}"));
            std::fs::write(&out_file, "").unwrap();
            std::fs::write(&sum_file, "").unwrap();
            let mut cmd = Command::new("bash");
            cmd.args(["--noprofile", "--norc", "-eo", "pipefail"])
                .arg(&script_path)
                .current_dir(self.workspace)
                .envs(&self.env)
                .env("GITHUB_OUTPUT", &out_file)
                .env("GITHUB_STEP_SUMMARY", &sum_file)
                .env("GITHUB_PATH", &github_path);
            let added = std::fs::read_to_string(&github_path).unwrap();
            let mut path: Vec<String> = added.lines().rev().map(String::from).collect();
            path.push(std::env::var("PATH").unwrap_or_default());
            cmd.env("PATH", path.join(":"));
            if let Some(env) = s.get("env").and_then(Value::as_object) {
                for (k, v) in env {
                    cmd.env(k, self.subst(v.as_str().unwrap_or("")));
                }
            }
            let out = cmd.output().expect("bash runs");
            step.code = out.status.code().unwrap_or(-1);
            step.stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            step.stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            let mut outputs = BTreeMap::new();
            for line in std::fs::read_to_string(&out_file).unwrap().lines() {
                let (k, v) = line.split_once('=').expect("key=value in GITHUB_OUTPUT");
                outputs.insert(k.to_string(), v.to_string());
            }
            if let Some(id) = s.get("id").and_then(Value::as_str) {
                self.outputs.insert(id.to_string(), outputs);
            }
            summary.push_str(&std::fs::read_to_string(&sum_file).unwrap());
            failed = step.code != 0;
            steps.push(step);
        }
        let outputs = action["outputs"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), self.subst(v["value"].as_str().unwrap_or(""))))
                    .collect()
            })
            .unwrap_or_default();
        let path_added = std::fs::read_to_string(&github_path)
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
        Run {
            _temp: temp_dir,
            steps,
            failed,
            outputs,
            summary,
            path_added,
        }
    }
}

/// Runs the action in `workspace` with these inputs (defaults from action.yml).
fn run_action(
    workspace: &Path,
    wheels: &Path,
    inputs: &[(&str, &str)],
    event_name: &str,
    event: Value,
) -> Run {
    let action = action();
    let temp = tempfile::tempdir().unwrap();
    let mut all = BTreeMap::new();
    for (k, v) in action["inputs"].as_object().expect("inputs") {
        let default = v.get("default").and_then(Value::as_str).unwrap_or("");
        all.insert(k.clone(), default.to_string());
    }
    for (k, v) in inputs {
        assert!(all.contains_key(*k), "action.yml has no input {k}");
        all.insert(k.to_string(), v.to_string());
    }
    let event_path = temp.path().join("event.json");
    std::fs::write(&event_path, event.to_string()).unwrap();
    let runner_temp = temp.path().join("runner-temp");
    std::fs::create_dir(&runner_temp).unwrap();
    let mut env = BTreeMap::new();
    let base_ref = event["pull_request"]["base"]["ref"]
        .as_str()
        .unwrap_or("")
        .to_string();
    for (k, v) in [
        ("CI", "true".to_string()),
        ("GITHUB_ACTIONS", "true".to_string()),
        ("GITHUB_WORKSPACE", workspace.display().to_string()),
        ("GITHUB_EVENT_NAME", event_name.to_string()),
        ("GITHUB_EVENT_PATH", event_path.display().to_string()),
        ("GITHUB_BASE_REF", base_ref),
        ("GITHUB_ACTION_PATH", env!("CARGO_MANIFEST_DIR").to_string()),
        ("RUNNER_TEMP", runner_temp.display().to_string()),
        ("RUNNER_OS", "Linux".to_string()),
        // The wheel .ci/run built, instead of PyPI.
        ("PIP_NO_INDEX", "1".to_string()),
        ("PIP_FIND_LINKS", wheels.display().to_string()),
        ("NO_COLOR", "1".to_string()),
    ] {
        env.insert(k.to_string(), v);
    }
    let runner = Runner {
        inputs: all,
        event,
        env,
        outputs: BTreeMap::new(),
        workspace,
    };
    runner.run(&action, temp)
}

/// The `with:` of the README workflow's `uses: locklint/locklint@…` step,
/// as the runner hands inputs over (strings; YAML booleans as "true"/"false").
fn readme_inputs() -> Vec<(String, String)> {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let block = gate_common::readme_block(&readme, "# .github/workflows/locklint.yml")
        .expect("README has the Action workflow");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("locklint.yml");
    std::fs::write(&file, &block).unwrap();
    let wf = yaml_json(&file).expect("the README workflow parses");
    let mut found = None;
    for job in wf["jobs"].as_object().unwrap().values() {
        for step in job["steps"].as_array().unwrap() {
            if step["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("locklint/locklint@"))
            {
                found = Some(step["with"].clone());
            }
        }
    }
    let with = found.expect("the README's workflow uses the action");
    with.as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| {
            let v = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (k.clone(), v)
        })
        .collect()
}

fn repo_with_bad_script() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    git(&ws, &["init", "-q", "-b", "main"]);
    write(&ws, "scripts/unlock.lua", UNLOCK_LUA);
    write(&ws, "scripts/release.lua", GOOD_LUA);
    git(&ws, &["add", "."]);
    git(&ws, &["commit", "-q", "-m", "base"]);
    (dir, ws)
}

fn describe(run: &Run) -> String {
    let mut s = String::new();
    for st in &run.steps {
        s.push_str(&format!(
            "--- {} (ran {}, exit {})\n{}{}",
            st.name, st.ran, st.code, st.stdout, st.stderr
        ));
    }
    s
}

#[test]
fn push_with_findings_annotates_writes_sarif_and_fails() {
    let Some(wheels) = wheel_dir() else { return };
    let (_dir, ws) = repo_with_bad_script();
    // The README's workflow on a push: its inputs, upload-sarif among them.
    let inputs = readme_inputs();
    assert!(inputs.contains(&("upload-sarif".into(), "true".into())));
    let inputs: Vec<(&str, &str)> = inputs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let run = run_action(&ws, &wheels, &inputs, "push", serde_json::json!({}));
    let all = describe(&run);
    assert!(run.failed, "findings must fail the action:\n{all}");
    let install = run.step("Install locklint");
    assert_eq!(install.code, 0, "{all}");
    assert!(
        install.stdout.contains("locklint 0.") || install.stdout.contains("locklint 1."),
        "{all}"
    );
    assert_eq!(run.path_added.len(), 1, "{all}");
    assert!(run.path_added[0].ends_with("locklint-venv/bin"), "{all}");

    let check = run.step("Run locklint");
    assert_eq!(check.code, 0, "the run step itself succeeds:\n{all}");
    assert!(
        check
            .stdout
            .lines()
            .any(|l| l.starts_with("::error file=scripts/unlock.lua,line=3,")
                && l.contains("title=LL006 unsafe-release-script::")),
        "no LL006 annotation:\n{all}"
    );
    assert!(!check.stdout.contains("release.lua"), "{all}");
    assert_eq!(run.outputs["exit-code"], "1");
    assert_eq!(run.outputs["findings"], "1");
    assert!(
        run.summary.contains("### locklint: 1 finding(s)"),
        "{}",
        run.summary
    );
    assert!(
        run.summary
            .contains("| `LL006 unsafe-release-script` | 1 |"),
        "{}",
        run.summary
    );

    // SARIF for code scanning, handed to upload-sarif.
    let upload = run.step("Upload SARIF to code scanning");
    let (uses, with) = upload.uses.as_ref().expect("upload-sarif is used");
    assert!(uses.starts_with("github/codeql-action/upload-sarif@"));
    assert_eq!(with["sarif_file"], run.outputs["sarif-file"]);
    assert_eq!(with["category"], "locklint");
    let sarif: Value =
        serde_json::from_str(&std::fs::read_to_string(&run.outputs["sarif-file"]).unwrap())
            .unwrap();
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{sarif}");
    assert_eq!(results[0]["ruleId"], "LL006");
    assert_eq!(
        sarif["runs"][0]["tool"]["driver"]["informationUri"],
        "https://github.com/locklint/locklint"
    );

    let fail = run.step("Fail on findings");
    assert!(fail.ran && fail.code == 1, "{all}");
    assert!(
        fail.stdout.contains("::error title=locklint::1 finding(s)"),
        "{all}"
    );
}

#[test]
fn findings_only_annotate_when_fail_on_findings_is_false_and_no_upload_by_default() {
    let Some(wheels) = wheel_dir() else { return };
    let (_dir, ws) = repo_with_bad_script();
    let run = run_action(
        &ws,
        &wheels,
        &[
            ("fail-on-findings", "false"),
            ("paths", "scripts/unlock.lua\nscripts/release.lua"),
        ],
        "push",
        serde_json::json!({}),
    );
    let all = describe(&run);
    assert!(!run.failed, "{all}");
    assert_eq!(run.outputs["exit-code"], "1", "{all}");
    assert!(
        run.step("Run locklint")
            .stdout
            .contains("::error file=scripts/unlock.lua"),
        "{all}"
    );
    assert!(!run.step("Upload SARIF to code scanning").ran);
    assert!(!run.step("Fail on findings").ran);
}

#[test]
fn pull_request_reports_only_lines_changed_since_the_base_commit() {
    let Some(wheels) = wheel_dir() else { return };
    let (_dir, ws) = repo_with_bad_script();
    let base = git(&ws, &["rev-parse", "HEAD"]).trim().to_string();
    git(&ws, &["checkout", "-q", "-b", "feature"]);
    write(&ws, "scripts/unlock2.lua", UNLOCK_LUA);
    git(&ws, &["add", "."]);
    git(&ws, &["commit", "-q", "-m", "feature"]);
    // actions/checkout fetches one commit: the base is not in the clone, so
    // the action fetches it from origin (GitHub serves any commit by id).
    git(&ws, &["config", "uploadpack.allowAnySHA1InWant", "true"]);
    let clone = ws.with_file_name("checkout");
    let url = format!("file://{}", ws.display());
    let parent = ws.parent().unwrap();
    git(
        parent,
        &[
            "clone", "-q", "--depth", "1", "--branch", "feature", &url, "checkout",
        ],
    );
    let ws = clone;
    let missing = Command::new("git")
        .current_dir(&ws)
        .args(["cat-file", "-e", &format!("{base}^{{commit}}")])
        .status()
        .unwrap();
    assert!(!missing.success(), "the shallow clone already has the base");
    let event = serde_json::json!({
        "pull_request": { "base": { "ref": "main", "sha": base } }
    });
    // The README's workflow on a pull request (changed-since-base: true).
    let inputs = readme_inputs();
    assert!(inputs.contains(&("changed-since-base".into(), "true".into())));
    let inputs: Vec<(&str, &str)> = inputs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let run = run_action(&ws, &wheels, &inputs, "pull_request", event.clone());
    let all = describe(&run);
    let check = run.step("Run locklint");
    assert!(check.stdout.contains("file=scripts/unlock2.lua"), "{all}");
    assert!(!check.stdout.contains("file=scripts/unlock.lua"), "{all}");
    assert_eq!(run.outputs["findings"], "1", "{all}");
    assert!(run.failed);
    assert!(run.step("Upload SARIF to code scanning").ran);

    // Without the input the whole tree counts, pull request or not.
    let run = run_action(
        &ws,
        &wheels,
        &[("fail-on-findings", "false")],
        "pull_request",
        event,
    );
    assert_eq!(run.outputs["findings"], "2", "{}", describe(&run));
}

#[test]
fn a_usage_error_fails_the_run_step_with_exit_2() {
    let Some(wheels) = wheel_dir() else { return };
    let (_dir, ws) = repo_with_bad_script();
    let run = run_action(
        &ws,
        &wheels,
        &[("args", "--select LL999")],
        "push",
        serde_json::json!({}),
    );
    let all = describe(&run);
    let check = run.step("Run locklint");
    assert_eq!(check.code, 2, "{all}");
    assert!(check.stderr.contains("unknown rule `LL999`"), "{all}");
    assert!(
        check
            .stdout
            .contains("::error title=locklint::locklint failed (exit 2)"),
        "{all}"
    );
    assert!(!run.step("Fail on findings").ran);
}

/// The action's default version, the pre-commit mirror's pin and the
/// README's `rev:` follow Cargo.toml's version.
#[test]
fn the_action_installs_this_version_by_default() {
    let Some(action) = yaml_json(&Path::new(env!("CARGO_MANIFEST_DIR")).join("action.yml")) else {
        assert!(!tools_required(), "python3 with PyYAML is needed");
        return;
    };
    assert_eq!(
        action["inputs"]["version"]["default"].as_str(),
        Some(env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(action["runs"]["using"], "composite");
}

/// The README's workflow uses only inputs the action has.
#[test]
fn the_readme_workflow_uses_the_actions_inputs() {
    let Some(action) = yaml_json(&Path::new(env!("CARGO_MANIFEST_DIR")).join("action.yml")) else {
        assert!(!tools_required(), "python3 with PyYAML is needed");
        return;
    };
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let block = gate_common::readme_block(&readme, "# .github/workflows/locklint.yml")
        .expect("README has the Action workflow");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("locklint.yml");
    std::fs::write(&file, &block).unwrap();
    let wf = yaml_json(&file).unwrap();
    let mut used = 0;
    for job in wf["jobs"].as_object().unwrap().values() {
        for step in job["steps"].as_array().unwrap() {
            let Some(uses) = step["uses"].as_str() else {
                continue;
            };
            if !uses.starts_with("locklint/locklint@") {
                continue;
            }
            used += 1;
            for k in step["with"].as_object().into_iter().flatten().map(|w| w.0) {
                assert!(
                    action["inputs"].get(k).is_some(),
                    "the README passes unknown input {k}"
                );
            }
        }
    }
    assert!(
        used > 0,
        "the README's workflow does not use the action:\n{block}"
    );
}
