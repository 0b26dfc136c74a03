//! The GitLab CI template (`packaging/gitlab/locklint.gitlab-ci.yml`) and
//! the README's written-out job, run the way a runner runs a job: the
//! `script:` lines in one bash (`-eo pipefail`, stopping at the first failing
//! line) in the project folder, with the job's `variables:`, in a fresh
//! Python environment standing in for the `python` image; pip installs the
//! wheel `.ci/run` built (offline).

mod gate_common;

use gate_common::{git, readme_block, tools_required, wheel_dir, write, yaml_json, UNLOCK_LUA};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

const TEMPLATE: &str = "packaging/gitlab/locklint.gitlab-ci.yml";

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `job`'s script in `project` with Python from `venv`; returns the
/// exit code and the output.
fn run_job(job: &Value, project: &Path, venv: &Path, wheels: &Path) -> (i32, String) {
    let script: Vec<&str> = job["script"]
        .as_array()
        .expect("script")
        .iter()
        .map(|l| l.as_str().expect("a script line is a string"))
        .collect();
    let mut cmd = Command::new("bash");
    cmd.args(["--noprofile", "--norc", "-eo", "pipefail", "-c"])
        .arg(script.join("\n"))
        .current_dir(project)
        .env(
            "PATH",
            format!(
                "{}:{}",
                venv.join("bin").display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env("CI", "true")
        .env("GITLAB_CI", "true")
        .env("CI_PROJECT_DIR", project)
        .env("PIP_NO_INDEX", "1")
        .env("PIP_FIND_LINKS", wheels)
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1");
    for (k, v) in job["variables"].as_object().into_iter().flatten() {
        cmd.env(k, v.as_str().expect("a variable is a string"));
    }
    let out = cmd.output().expect("bash runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

fn fresh_venv(dir: &Path) -> std::path::PathBuf {
    let venv = dir.join("image-python");
    let ok = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "python3 -m venv works");
    venv
}

fn project(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("project");
    std::fs::create_dir(&p).unwrap();
    git(&p, &["init", "-q"]);
    write(&p, "scripts/unlock.lua", UNLOCK_LUA);
    p
}

fn code_quality(project: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(project.join("gl-code-quality-report.json"))
        .expect("the Code Quality report is written");
    serde_json::from_str::<Value>(&text)
        .unwrap()
        .as_array()
        .cloned()
        .unwrap()
}

#[test]
fn the_template_job_reports_code_quality_and_fails_only_on_findings() {
    let Some(wheels) = wheel_dir() else { return };
    let doc = yaml_json(&manifest().join(TEMPLATE)).expect("the template parses");
    let job = &doc["locklint"];
    assert_eq!(
        job["variables"]["LOCKLINT_VERSION"].as_str(),
        Some(env!("CARGO_PKG_VERSION")),
        "the template pins this version"
    );
    assert_eq!(
        job["artifacts"]["reports"]["codequality"],
        "gl-code-quality-report.json"
    );
    let tmp = tempfile::tempdir().unwrap();
    let venv = fresh_venv(tmp.path());
    let p = project(tmp.path());

    let (code, out) = run_job(job, &p, &venv, &wheels);
    assert_eq!(code, 1, "findings fail the job:\n{out}");
    assert!(out.contains("LL006"), "{out}");
    let report = code_quality(&p);
    assert_eq!(report.len(), 1, "{report:?}");
    assert_eq!(report[0]["check_name"], "LL006 unsafe-release-script");
    assert_eq!(report[0]["location"]["path"], "scripts/unlock.lua");

    // A variable of the user's own job narrows the paths.
    write(&p, "src/app.py", "print('no redis here')\n");
    let mut narrowed = job.clone();
    narrowed["variables"]["LOCKLINT_PATHS"] = Value::from("src");
    let (code, out) = run_job(&narrowed, &p, &venv, &wheels);
    assert_eq!(code, 0, "{out}");
    assert!(code_quality(&p).is_empty());
}

#[test]
fn the_readme_gitlab_snippets_match_the_template_and_run() {
    let readme = std::fs::read_to_string(manifest().join("README.md")).unwrap();
    let include = readme_block(&readme, "# .gitlab-ci.yml").expect("README includes the template");
    let url = format!(
        "https://raw.githubusercontent.com/locklint/locklint/v{}/{TEMPLATE}",
        env!("CARGO_PKG_VERSION")
    );
    assert!(
        include.contains(&format!("  - remote: {url}\n")),
        "{include}"
    );

    let Some(wheels) = wheel_dir() else { return };
    let block = readme_block(&readme, "# .gitlab-ci.yml, without the template")
        .expect("README has the written-out job");
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("gitlab-ci.yml");
    std::fs::write(&file, block).unwrap();
    let Some(doc) = yaml_json(&file) else {
        assert!(!tools_required(), "python3 with PyYAML is needed");
        return;
    };
    let venv = fresh_venv(tmp.path());
    let p = project(tmp.path());
    let (code, out) = run_job(&doc["locklint"], &p, &venv, &wheels);
    assert_eq!(code, 1, "{out}");
    assert_eq!(code_quality(&p).len(), 1);
}
