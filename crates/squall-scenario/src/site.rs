//! Site manifests for the web application (seed 003 §3: "a web site of 499
//! files"): a CSV file of `path,bytes` lines, read relative to the
//! scenario file into `app.web.site_files`. A header line `path,bytes`,
//! blank lines and `#` comments are allowed. Both engines use it: the
//! simulator fetches the sizes in the file's order, the emulator writes
//! the files under the run directory and fetches them with wget.

use std::path::Path;

use crate::error::{ErrorKind, KeyPath, ScenarioError};
use crate::schema::{Scenario, SiteFile, TcpApp};
use crate::source::Source;

/// The largest file of a site, bytes (1 GB): a typo such as an extra
/// digit is refused before the emulator writes it to disk.
pub const MAX_SITE_FILE: u64 = 1 << 30;

/// Reads the manifest of every web application that names one.
pub(crate) fn resolve(s: &mut Scenario, base_dir: &Path, src: &Source) -> Result<(), ScenarioError> {
    for (i, flow) in s.workload.tcp.iter_mut().enumerate() {
        let TcpApp::Web(web) = &mut flow.app else { continue };
        let Some(file) = &web.site else { continue };
        if !web.site_files.is_empty() {
            // A run's resolved scenario: the files it ran with win.
            continue;
        }
        let key = KeyPath::root().key("workload").key("tcp").index(i).key("app").key("web").key("site");
        let full = base_dir.join(file.as_str());
        let shown = full.display().to_string();
        let text = crate::source::read_text(&full).map_err(|e| {
            src.error(
                ErrorKind::DistributionFile,
                &key,
                format!("cannot read the site manifest {shown}: {e}; expected a CSV file of `path,bytes` lines, like `index.html,2400`"),
            )
            .label("cannot read this file")
        })?;
        web.site_files = read_site(&text).map_err(|(span, line, why)| {
            let detail = ScenarioError::new(ErrorKind::DistributionFile, &shown, Some(&text), Some(span))
                .message(why.clone())
                .label("this line");
            src.error(ErrorKind::DistributionFile, &key, format!("{shown}:{line}: {why}"))
                .label(format!("bad line {line} in this file"))
                .related(detail)
        })?;
        if web.site_files.is_empty() {
            return Err(src.error(
                ErrorKind::DistributionFile,
                &key,
                format!("{shown} lists no files; expected `path,bytes` lines, like `index.html,2400`"),
            ));
        }
    }
    Ok(())
}

/// The files of a manifest, or the span, 1-based line and reason of the
/// first bad line.
pub fn read_site(text: &str) -> Result<Vec<SiteFile>, (std::ops::Range<usize>, usize, String)> {
    let mut files = Vec::new();
    let mut offset = 0;
    for (n, raw) in text.split_inclusive('\n').enumerate() {
        let start = offset;
        offset += raw.len();
        let content = raw.split('#').next().unwrap_or("");
        let line = content.trim();
        if line.is_empty() || (files.is_empty() && line.replace(' ', "") == "path,bytes") {
            continue;
        }
        let lead = content.len() - content.trim_start().len();
        let span = start + lead..start + lead + line.len();
        let bad = |why: String| (span.clone(), n + 1, why);
        let Some((path, bytes)) = line.split_once(',') else {
            return Err(bad(format!("{line:?} is not `path,bytes`, like `img/0007.gif,2400`")));
        };
        let path = path.trim();
        if path.is_empty()
            || path.starts_with('/')
            || path.split('/').any(|p| p.is_empty() || p == "." || p == "..")
            || !path.chars().all(|c| c.is_ascii_alphanumeric() || "._-/".contains(c))
        {
            return Err(bad(format!(
                "{path:?} is not a relative path of letters, digits, `.`, `_`, `-` and `/` without `..`, like `img/0007.gif`"
            )));
        }
        let bytes: u64 = match bytes.trim().parse() {
            Ok(b) if (1..=MAX_SITE_FILE).contains(&b) => b,
            _ => {
                return Err(bad(format!(
                    "{:?} is not a size in bytes from 1 to {MAX_SITE_FILE}, like `2400`",
                    bytes.trim()
                )));
            }
        };
        if files.iter().any(|f: &SiteFile| f.path == path) {
            return Err(bad(format!("{path:?} is listed twice")));
        }
        files.push(SiteFile { path: path.to_string(), bytes });
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_manifest_with_header_and_comments() {
        let f = read_site("path,bytes\n# the page\nindex.html,2400\n\nimg/1.gif, 300 # logo\n").unwrap();
        assert_eq!(f.len(), 2);
        assert_eq!(f[1], SiteFile { path: "img/1.gif".into(), bytes: 300 });
    }

    #[test]
    fn names_the_bad_line() {
        assert_eq!(read_site("a,1\nb\n").unwrap_err().1, 2);
        assert_eq!(read_site("a,1\n../etc/passwd,3\n").unwrap_err().1, 2);
        assert_eq!(read_site("a,0\n").unwrap_err().1, 1);
        assert_eq!(read_site("a,1\na,2\n").unwrap_err().1, 2);
        assert!(read_site("/abs,1\n").is_err());
    }
}
