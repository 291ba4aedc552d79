//! Unified diffs of two texts, line by line (`tritonctl fmt --diff`).

const CONTEXT: usize = 3;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Op {
    Equal,
    Delete,
    Insert,
}

/// Line operations turning `a` into `b`: a longest common subsequence after
/// the common head and tail are set aside; when the rest is too large for
/// that (more than 16 million line pairs) it is all deleted and inserted.
fn line_ops(a: &[&str], b: &[&str]) -> Vec<Op> {
    let head = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (ma, mb) = (&a[head..a.len() - tail], &b[head..b.len() - tail]);
    let mut ops = vec![Op::Equal; head];
    let (n, m) = (ma.len(), mb.len());
    if n.saturating_mul(m) > 16_000_000 {
        ops.extend(std::iter::repeat_n(Op::Delete, n));
        ops.extend(std::iter::repeat_n(Op::Insert, m));
    } else {
        // lcs[i * (m + 1) + j]: length of the LCS of ma[i..] and mb[j..]
        // (at most min(n, m) <= 4000, so u16 is enough).
        let w = m + 1;
        let mut lcs = vec![0u16; (n + 1) * w];
        for i in (0..n).rev() {
            for j in (0..m).rev() {
                lcs[i * w + j] = if ma[i] == mb[j] {
                    lcs[(i + 1) * w + j + 1] + 1
                } else {
                    lcs[(i + 1) * w + j].max(lcs[i * w + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < n || j < m {
            if i < n && j < m && ma[i] == mb[j] {
                ops.push(Op::Equal);
                i += 1;
                j += 1;
            } else if j == m || (i < n && lcs[(i + 1) * w + j] >= lcs[i * w + j + 1]) {
                ops.push(Op::Delete);
                i += 1;
            } else {
                ops.push(Op::Insert);
                j += 1;
            }
        }
    }
    ops.extend(std::iter::repeat_n(Op::Equal, tail));
    ops
}

/// A unified diff (three lines of context) from `old` to `new`; empty when
/// they are equal.
pub fn unified_diff(old: &str, new: &str, old_name: &str, new_name: &str) -> String {
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    let ops = line_ops(&a, &b);
    // Line positions before each op.
    let mut pos = Vec::with_capacity(ops.len() + 1);
    let (mut i, mut j) = (0usize, 0usize);
    for op in &ops {
        pos.push((i, j));
        match op {
            Op::Equal => {
                i += 1;
                j += 1;
            }
            Op::Delete => i += 1,
            Op::Insert => j += 1,
        }
    }
    pos.push((i, j));
    let changes: Vec<usize> = (0..ops.len()).filter(|&k| ops[k] != Op::Equal).collect();
    if changes.is_empty() {
        return String::new();
    }
    let mut hunks: Vec<(usize, usize)> = Vec::new();
    for &c in &changes {
        let (s, e) = (c.saturating_sub(CONTEXT), (c + 1 + CONTEXT).min(ops.len()));
        match hunks.last_mut() {
            Some(h) if s <= h.1 => h.1 = e,
            _ => hunks.push((s, e)),
        }
    }
    let mut out = format!("--- {old_name}\n+++ {new_name}\n");
    for (s, e) in hunks {
        let count = |want: Op| {
            ops[s..e]
                .iter()
                .filter(|&&o| o == Op::Equal || o == want)
                .count()
        };
        let (na, nb) = (count(Op::Delete), count(Op::Insert));
        let start = |p: usize, n: usize| if n == 0 { p } else { p + 1 };
        out.push_str(&format!(
            "@@ -{},{na} +{},{nb} @@\n",
            start(pos[s].0, na),
            start(pos[s].1, nb)
        ));
        for k in s..e {
            let (mark, line) = match ops[k] {
                Op::Equal => (' ', a[pos[k].0]),
                Op::Delete => ('-', a[pos[k].0]),
                Op::Insert => ('+', b[pos[k].1]),
            };
            out.push(mark);
            out.push_str(line);
            if !line.ends_with('\n') {
                out.push_str("\n\\ No newline at end of file\n");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Applies a unified diff to `old` (a minimal patch(1)).
    fn apply(old: &str, diff: &str) -> String {
        let a: Vec<&str> = old.split_inclusive('\n').collect();
        let mut out = String::new();
        let mut next = 0usize; // next line of `a` not copied yet
        let mut lines = diff.split_inclusive('\n').skip(2).peekable();
        while let Some(h) = lines.next() {
            assert!(h.starts_with("@@ -"), "{h}");
            let old_start: usize = h[4..].split(',').next().unwrap().parse().unwrap();
            let copy_to = old_start.saturating_sub(1);
            let old_len: usize = h
                .split(' ')
                .nth(1)
                .unwrap()
                .split(',')
                .nth(1)
                .unwrap()
                .parse()
                .unwrap();
            let copy_to = if old_len == 0 { old_start } else { copy_to };
            while next < copy_to {
                out.push_str(a[next]);
                next += 1;
            }
            while let Some(l) = lines.peek() {
                if l.starts_with("@@") {
                    break;
                }
                let l = lines.next().unwrap();
                let no_nl = lines.peek().is_some_and(|n| n.starts_with('\\'));
                let text = if no_nl {
                    lines.next();
                    &l[1..l.len() - 1]
                } else {
                    &l[1..]
                };
                match &l[..1] {
                    " " => {
                        out.push_str(text);
                        next += 1;
                    }
                    "-" => next += 1,
                    "+" => out.push_str(text),
                    other => panic!("bad diff line {other:?}"),
                }
            }
        }
        while next < a.len() {
            out.push_str(a[next]);
            next += 1;
        }
        out
    }

    #[test]
    fn diffs_apply_back() {
        let cases = [
            ("", "a\n"),
            ("a\n", ""),
            ("a\nb\nc\n", "a\nB\nc\n"),
            ("a\nb", "a\nb\n"),
            (
                "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n",
                "1\nx\n3\n4\n5\n6\n7\n8\n9\n10\ny\n12\n",
            ),
            ("a\r\nb\r\n", "a\nb\n"),
            ("x\ny\n", "y\nx\n"),
        ];
        for (old, new) in cases {
            let d = unified_diff(old, new, "f", "f");
            assert_eq!(apply(old, &d), new, "diff:\n{d}");
        }
        assert_eq!(unified_diff("same\n", "same\n", "f", "f"), "");
    }

    #[test]
    fn hunks_keep_three_lines_of_context() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n";
        let new = "1\nx\n3\n4\n5\n6\n7\n8\n9\n10\ny\n12\n";
        let d = unified_diff(old, new, "f", "f");
        assert_eq!(
            d,
            "--- f\n+++ f\n@@ -1,5 +1,5 @@\n 1\n-2\n+x\n 3\n 4\n 5\n@@ -8,5 +8,5 @@\n 8\n 9\n 10\n-11\n+y\n 12\n"
        );
        assert_eq!(
            unified_diff("a", "b\n", "f", "f"),
            "--- f\n+++ f\n@@ -1,1 +1,1 @@\n-a\n\\ No newline at end of file\n+b\n"
        );
    }
}
