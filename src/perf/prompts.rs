//! Prompts for generative endpoints: synthetic ones with a word count
//! drawn from a normal distribution (`--prompt-words MEAN[:STDDEV]`,
//! seeded by `--seed`), or the ones of `--input-data FILE`.

use super::rng::Rng;

/// Prompts drawn when neither `--prompt-words` nor a prompt file is given.
pub const DEFAULT_WORDS: (f64, f64) = (100.0, 0.0);

/// Distinct synthetic prompts made; requests take them in turn.
pub const SYNTHETIC_PROMPTS: usize = 1000;

/// The words synthetic prompts are made of: plain English words, each one
/// token for common tokenizers, so that a word count is close to a token
/// count.
const WORDS: &[&str] = &[
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "that",
    "for",
    "it",
    "as",
    "was",
    "with",
    "be",
    "by",
    "on",
    "not",
    "he",
    "this",
    "are",
    "or",
    "his",
    "from",
    "at",
    "which",
    "but",
    "have",
    "an",
    "had",
    "they",
    "you",
    "were",
    "their",
    "one",
    "all",
    "we",
    "can",
    "her",
    "has",
    "there",
    "been",
    "if",
    "more",
    "when",
    "will",
    "would",
    "who",
    "so",
    "no",
    "time",
    "year",
    "people",
    "way",
    "day",
    "man",
    "thing",
    "woman",
    "life",
    "child",
    "world",
    "school",
    "state",
    "family",
    "group",
    "country",
    "problem",
    "hand",
    "part",
    "place",
    "case",
    "week",
    "company",
    "system",
    "program",
    "question",
    "work",
    "number",
    "night",
    "point",
    "home",
    "water",
    "room",
    "mother",
    "area",
    "money",
    "story",
    "fact",
    "month",
    "lot",
    "right",
    "study",
    "book",
    "eye",
    "job",
    "word",
    "business",
    "issue",
    "side",
    "kind",
    "head",
    "house",
    "service",
    "friend",
    "father",
    "power",
    "hour",
    "game",
    "line",
    "end",
    "member",
    "law",
    "car",
    "city",
    "name",
    "team",
    "minute",
    "idea",
    "kid",
    "body",
    "back",
    "parent",
    "face",
    "others",
    "level",
    "office",
    "door",
    "health",
    "person",
    "art",
    "war",
    "history",
    "party",
    "result",
    "change",
    "morning",
    "reason",
    "research",
    "girl",
    "guy",
    "moment",
    "air",
    "teacher",
    "force",
    "education",
];

/// `MEAN[:STDDEV]` of `--prompt-words`: MEAN at least 1, STDDEV 0 or more.
pub fn parse_words(text: &str) -> Result<(f64, f64), String> {
    let bad =
        || format!("--prompt-words '{text}' is not MEAN[:STDDEV] with MEAN >= 1 and STDDEV >= 0");
    let (m, s) = match text.split_once(':') {
        Some((m, s)) => (m, Some(s)),
        None => (text, None),
    };
    let mean: f64 = m.trim().parse().map_err(|_| bad())?;
    let sd: f64 = match s {
        Some(s) => s.trim().parse().map_err(|_| bad())?,
        None => 0.0,
    };
    if !((1.0..=1e6).contains(&mean) && (0.0..=1e6).contains(&sd)) {
        return Err(bad());
    }
    Ok((mean, sd))
}

/// `count` prompts whose word counts are drawn from a normal distribution
/// (rounded, at least 1 word), the same for the same seed.
pub fn synthetic((mean, sd): (f64, f64), seed: u64, count: usize) -> Vec<String> {
    let mut rng = Rng::new(seed ^ 0x9e37_79b9_7f4a_7c15);
    (0..count)
        .map(|_| {
            // Box-Muller: a standard normal from two uniforms
            let u1 = rng.next_f64().max(f64::MIN_POSITIVE);
            let u2 = rng.next_f64();
            let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
            let n = (mean + sd * z).round().max(1.0) as usize;
            let mut p = String::with_capacity(n * 6);
            for i in 0..n {
                if i > 0 {
                    p.push(' ');
                }
                p.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
            }
            p
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_counts_follow_the_distribution() {
        let p = synthetic((50.0, 10.0), 7, 2000);
        let counts: Vec<f64> = p.iter().map(|s| s.split(' ').count() as f64).collect();
        let mean = counts.iter().sum::<f64>() / counts.len() as f64;
        let var = counts.iter().map(|c| (c - mean).powi(2)).sum::<f64>() / counts.len() as f64;
        assert!((mean - 50.0).abs() < 1.0, "mean {mean}");
        assert!((var.sqrt() - 10.0).abs() < 1.0, "stddev {}", var.sqrt());
        assert_eq!(p, synthetic((50.0, 10.0), 7, 2000), "seeded");
        assert_ne!(p, synthetic((50.0, 10.0), 8, 2000));
        let fixed = synthetic((3.0, 0.0), 1, 10);
        assert!(fixed.iter().all(|s| s.split(' ').count() == 3));
        // a wide spread never gives an empty prompt
        assert!(synthetic((1.0, 50.0), 1, 500).iter().all(|s| !s.is_empty()));
    }

    #[test]
    fn words_flag() {
        assert_eq!(parse_words("100"), Ok((100.0, 0.0)));
        assert_eq!(parse_words("64:8"), Ok((64.0, 8.0)));
        for bad in ["0", "x", "10:-1", "nan", "inf", "10:", ":3", "1e9"] {
            assert!(parse_words(bad).is_err(), "{bad}");
        }
    }
}
