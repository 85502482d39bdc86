//! What the ABI tests share (`abi_header.rs` against DLPack's `dlpack.h`, `xla_abi_header.rs`
//! against XLA's `c_api.h`): a C probe compiled against the real header prints one `NAME VALUE`
//! line per item (sizes, alignments, field offsets, enumerators, macros), the Rust side builds
//! the same table, and every item that differs is reported by name. A small scanner of the
//! header's text finds the enumerators a future header adds, so that none is silently ignored.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io;
use std::mem::size_of;
use std::path::Path;
use std::process::{Command, Output};

/// `name -> value`, one entry per checked item.
pub type Table = BTreeMap<String, i128>;

/// The size of the type of one field, given an accessor of that field.
pub fn field_size<S, F>(_field: fn(&S) -> &F) -> usize {
    size_of::<F>()
}

pub fn insert(table: &mut Table, name: String, value: impl TryInto<i128>) {
    let value = value
        .try_into()
        .unwrap_or_else(|_| panic!("{name}: value does not fit in i128"));
    assert!(
        table.insert(name.clone(), value).is_none(),
        "{name} inserted twice"
    );
}

/// Adds `sizeof(T)`, `alignof(T)` and, for each listed field, `offsetof(T.field)` and
/// `sizeof(T.field)` of `module::T`, with the names the C probes print.
macro_rules! rust_layout {
    ($table:expr, $module:ident :: $ty:ident $({ $($field:ident),* $(,)? })?) => {{
        let table: &mut $crate::c_probe::Table = $table;
        let ty = stringify!($ty);
        $crate::c_probe::insert(table, format!("sizeof({ty})"), size_of::<$module::$ty>());
        $crate::c_probe::insert(table, format!("alignof({ty})"), align_of::<$module::$ty>());
        $($(
            let field = stringify!($field);
            $crate::c_probe::insert(
                table,
                format!("offsetof({ty}.{field})"),
                offset_of!($module::$ty, $field),
            );
            $crate::c_probe::insert(
                table,
                format!("sizeof({ty}.{field})"),
                $crate::c_probe::field_size(|value: &$module::$ty| &value.$field),
            );
        )*)?
    }};
}
pub(crate) use rust_layout;

// ---------------------------------------------------------------------------------------------
// Comparison.

/// Every item that differs between the two tables, as `item: header=X rust=Y`, in item order.
pub fn compare(header: &Table, rust: &Table) -> Vec<String> {
    let names: BTreeSet<&String> = header.keys().chain(rust.keys()).collect();
    let show = |value: Option<&i128>| value.map_or_else(|| "<missing>".to_owned(), i128::to_string);
    names
        .into_iter()
        .filter_map(|name| {
            let (h, r) = (header.get(name), rust.get(name));
            (h != r).then(|| format!("{name}: header={} rust={}", show(h), show(r)))
        })
        .collect()
}

/// Parses the probe's output: one `NAME VALUE` line per item.
pub fn parse_probe_output(text: &str) -> Result<Table, String> {
    let mut table = Table::new();
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        let (name, value) = line
            .trim()
            .rsplit_once(' ')
            .ok_or_else(|| format!("probe line without a value: {line:?}"))?;
        let value: i128 = value
            .parse()
            .map_err(|err| format!("probe line with a bad value: {line:?}: {err}"))?;
        if table.insert(name.to_owned(), value).is_some() {
            return Err(format!("probe printed {name} twice"));
        }
    }
    Ok(table)
}

// ---------------------------------------------------------------------------------------------
// A small scanner of the header text.

/// One enumerator found in the header text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Enumerator {
    /// Its name.
    pub name: String,
    /// The explicit value, when it is a plain number.
    pub value: Option<i128>,
    /// The typedef name of its enum (`} NAME;` after it), when found.
    pub enum_name: Option<String>,
}

/// The text without `/* */` and `//` comments; each comment becomes a space.
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("/*").into_iter().chain(rest.find("//")).min() {
        out.push_str(&rest[..start]);
        out.push(' ');
        rest = if rest[start..].starts_with("/*") {
            rest[start + 2..]
                .find("*/")
                .map_or("", |end| &rest[start + 2 + end + 2..])
        } else {
            rest[start..]
                .find('\n')
                .map_or("", |end| &rest[start + end..])
        };
    }
    out.push_str(rest);
    out
}

/// Identifiers and numbers as one token each, any other non-space character as its own token.
fn tokens(text: &str) -> Vec<&str> {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = Vec::new();
    let mut rest = text.trim_start();
    while let Some(first) = rest.chars().next() {
        let len = if is_word(first) {
            rest.find(|c: char| !is_word(c)).unwrap_or(rest.len())
        } else {
            first.len_utf8()
        };
        out.push(&rest[..len]);
        rest = rest[len..].trim_start();
    }
    out
}

/// A C integer literal (decimal or hexadecimal, with an optional `u`/`l` suffix).
pub fn parse_c_integer(token: &str) -> Option<i128> {
    let digits = token.trim_end_matches(['u', 'U', 'l', 'L']);
    match digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        Some(hex) => i128::from_str_radix(hex, 16).ok(),
        None => digits.parse().ok(),
    }
}

/// Every enumerator whose name starts with `prefix` (`kDL`, `XLA_FFI_`) in the header, with
/// its value when it is a plain number and the name of the enum it belongs to.
///
/// Comments and preprocessor lines are dropped first. Only the bodies of `enum` declarations
/// are read (an identifier in a macro's arguments is no enumerator): in one, an enumerator is
/// such an identifier followed by `=`, `,` or `}`. The enum's name is the typedef name after
/// its closing brace (`} NAME;`), else its tag (`enum TAG {`).
pub fn scan_enumerators(header_text: &str, prefix: &str) -> Vec<Enumerator> {
    let code: String = strip_comments(header_text)
        .lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .flat_map(|line| [line, "\n"])
        .collect();
    let toks = tokens(&code);
    let mut found: Vec<Enumerator> = Vec::new();
    // Inside an enum's body: the index of its first enumerator in `found`, and its tag.
    let mut body: Option<(usize, Option<&str>)> = None;
    for (i, &tok) in toks.iter().enumerate() {
        let next = |k: usize| toks.get(i + k).copied().unwrap_or("");
        match body {
            None if tok == "enum" => {
                let tag = next(1).starts_with(char::is_alphabetic).then(|| next(1));
                let brace = if tag.is_some() { 2 } else { 1 };
                if next(brace) == "{" {
                    body = Some((found.len(), tag));
                }
            }
            Some((first, tag)) if tok == "}" => {
                let typedef_name =
                    (next(2) == ";" && next(1).starts_with(char::is_alphabetic)).then(|| next(1));
                if let Some(name) = typedef_name.or(tag) {
                    for enumerator in &mut found[first..] {
                        enumerator.enum_name = Some(name.to_owned());
                    }
                }
                body = None;
            }
            Some(_) if tok.starts_with(prefix) && matches!(next(1), "=" | "," | "}") => {
                let value = match (next(1), next(2)) {
                    ("=", "-") => parse_c_integer(next(3)).map(|v| -v),
                    ("=", number) => parse_c_integer(number),
                    _ => None,
                };
                found.push(Enumerator {
                    name: tok.to_owned(),
                    value,
                    enum_name: None,
                });
            }
            _ => {}
        }
    }
    found
}

/// The value of `#define NAME <integer>` in the header, if any.
pub fn header_define(header_text: &str, name: &str) -> Option<i128> {
    header_text.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        (words.next() == Some("#define") && words.next() == Some(name))
            .then(|| words.next().and_then(parse_c_integer))
            .flatten()
    })
}

/// Problems with the enumerators found in the header text: each must have been printed by the
/// probe (with the value the text gives) and must be known to the Rust side.
///
/// `probe` names the probe's source in the report.
pub fn check_enumerator_coverage(
    enums: &[Enumerator],
    header: &Table,
    rust: &Table,
    probe: &str,
) -> Vec<String> {
    let mut problems = Vec::new();
    for e in enums {
        let declared = e.value.map_or_else(|| "?".to_owned(), |v| v.to_string());
        match (header.get(&e.name), e.value) {
            (None, _) => problems.push(format!(
                "{}: declared in the header (= {declared}) but not printed by {probe}",
                e.name
            )),
            (Some(&probed), Some(text)) if probed != text => problems.push(format!(
                "{}: the header text says {text} but the compiled probe printed {probed}",
                e.name
            )),
            _ => {}
        }
        if !rust.contains_key(&e.name) {
            problems.push(format!(
                "{}: declared in the header (= {declared}) but missing on the Rust side",
                e.name
            ));
        }
    }
    problems
}

/// Problems with an `ALL` list: it must hold exactly the values of the enumerators that the
/// header declares in `enum_name`.
pub fn check_all_list(
    enums: &[Enumerator],
    header: &Table,
    enum_name: &str,
    all: &[i128],
) -> Vec<String> {
    let members: Vec<&Enumerator> = enums
        .iter()
        .filter(|e| e.enum_name.as_deref() == Some(enum_name))
        .collect();
    let mut problems = Vec::new();
    if members.len() != all.len() {
        problems.push(format!(
            "{enum_name}: the header declares {} enumerators, the Rust ALL list has {}",
            members.len(),
            all.len()
        ));
    }
    let header_values: BTreeSet<i128> = members
        .iter()
        .filter_map(|e| header.get(&e.name).copied().or(e.value))
        .collect();
    for value in all {
        if !header_values.contains(value) {
            problems.push(format!(
                "{enum_name}: the Rust ALL list has {value}, which no enumerator of the header has"
            ));
        }
    }
    problems
}

/// Whether the tests run under CI (`CI` is `true` or `1`).
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
}

/// Reports that the check `test` cannot run: a failure under CI, a visible skip otherwise.
pub fn unavailable(test: &str, reason: &str) {
    assert!(
        !in_ci(),
        "{test}: the ABI check could not run and CI is set, so this is a failure:\n{reason}"
    );
    eprintln!("{test}: skipped: {reason}");
}

/// Runs a command; `Err` describes a failure to start or a non-zero exit with its stderr.
pub fn run(command: &mut Command) -> Result<Output, String> {
    let shown = format!("{command:?}");
    let output = command
        .output()
        .map_err(|err| format!("cannot run {shown}: {err}"))?;
    if output.status.success() {
        Ok(output)
    } else {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(6).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        Err(format!(
            "{shown} failed ({}): {}",
            output.status,
            tail.join(" | ")
        ))
    }
}

/// Why the probe gave no table.
pub enum ProbeError {
    /// No C compiler: handled like a missing header.
    NoCompiler(String),
    /// Anything else: always a failure.
    Failed(String),
}

/// Compiles the C probe `probe_source` with `include` on the include path, runs it in `work`
/// (removed afterwards) and returns what it prints.
pub fn compile_and_run(
    probe_source: &Path,
    include: &Path,
    work: &Path,
) -> Result<Table, ProbeError> {
    let failed =
        |what: &Path, err: io::Error| ProbeError::Failed(format!("{}: {err}", what.display()));
    fs::create_dir_all(work).map_err(|err| failed(work, err))?;
    let binary = work.join(format!("probe{}", std::env::consts::EXE_SUFFIX));
    let mut compile = Command::new("cc");
    compile
        .args(["-std=c11", "-Wall", "-Wextra", "-o"])
        .arg(&binary)
        .arg("-I")
        .arg(include)
        .arg(probe_source);
    let compiled = match compile.output() {
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            return Err(ProbeError::NoCompiler(format!(
                "no C compiler: `cc` not found ({err})"
            )));
        }
        Err(err) => return Err(ProbeError::Failed(format!("cannot run cc: {err}"))),
        Ok(output) => output,
    };
    if !compiled.status.success() {
        return Err(ProbeError::Failed(format!(
            "{compile:?} failed ({}); is the probe out of date with the header?\n{}",
            compiled.status,
            String::from_utf8_lossy(&compiled.stderr)
        )));
    }
    let output = run(&mut Command::new(&binary)).map_err(ProbeError::Failed)?;
    let _ = fs::remove_dir_all(work);
    parse_probe_output(&String::from_utf8_lossy(&output.stdout)).map_err(ProbeError::Failed)
}
