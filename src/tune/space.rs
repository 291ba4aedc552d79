//! The settings a search tries, and each candidate's config text: the
//! model's own config with the searched fields edited in place
//! (`format::edit`), so the text validated, simulated and written is one.

use super::Error;
use crate::format::edit::{self, steps};
use crate::schema::inference::model_config::SchedulingChoice;
use crate::schema::inference::ModelConfig;
use serde::Serialize;

/// Most settings (everything but the instance count) one search holds.
pub const MAX_SETTINGS: usize = 10_000;

/// Default grid of `max_queue_delay_microseconds`.
pub const DEFAULT_DELAYS_US: &[u64] = &[0, 100, 500, 1000, 2000, 5000, 10000];

/// The scheduler of a setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Strategy {
    /// The model does not batch: its scheduler is kept as it is.
    Kept,
    /// `dynamic_batching`.
    Dynamic,
    /// `sequence_batching` with the Direct strategy.
    Direct,
    /// `sequence_batching` with the Oldest strategy.
    Oldest { max_candidate_sequences: u32 },
}

/// Everything of a candidate but its instance count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Setting {
    /// `None`: the model does not batch (max_batch_size 0), left as is.
    pub max_batch_size: Option<u32>,
    pub strategy: Strategy,
    /// `None`: no preferred batch sizes listed.
    pub preferred_batch_size: Option<Vec<u32>>,
    pub max_queue_delay_microseconds: u64,
}

/// What is searched.
#[derive(Debug, Clone)]
pub struct SpaceOptions {
    /// Instance counts 1..=this (per GPU for a GPU instance group).
    pub max_instances: u32,
    /// Largest max_batch_size tried (default: the config's).
    pub max_batch_size: Option<u32>,
    pub delays_us: Vec<u64>,
}

/// The settings of a search, in the order they are tried.
#[derive(Debug, Clone)]
pub struct Space {
    pub settings: Vec<Setting>,
    pub max_instances: u32,
}

impl Space {
    pub fn grid(&self) -> usize {
        self.settings.len() * self.max_instances as usize
    }
}

/// Powers of two below `limit`, then `limit`.
fn sizes_up_to(limit: u32) -> Vec<u32> {
    let mut v: Vec<u32> = (0..32)
        .map(|k| 1u32 << k)
        .take_while(|&p| p < limit)
        .collect();
    v.push(limit);
    v
}

/// The settings for `cfg` (the model's config as written).
pub fn space(cfg: &ModelConfig, opts: &SpaceOptions) -> Result<Space, Error> {
    if opts.max_instances == 0 {
        return Err(Error::Usage("--max-instances must be at least 1".into()));
    }
    if cfg.instance_group.len() > 1 {
        return Err(Error::Usage(format!(
            "the config has {} instance groups; tune searches the count of one (merge them, or tune a config with one group)",
            cfg.instance_group.len()
        )));
    }
    let mut delays = opts.delays_us.clone();
    delays.sort_unstable();
    delays.dedup();
    if delays.is_empty() {
        delays.push(0);
    }
    let current = cfg.max_batch_size.max(0) as u32;
    if let Some(m) = opts.max_batch_size {
        if current == 0 && m > 0 {
            return Err(Error::Usage(
                "--max-batch-size: the config has max_batch_size 0 (the model does not batch); set a max_batch_size in the config first".into(),
            ));
        }
    }
    let limit = opts.max_batch_size.unwrap_or(current);
    let sequence = matches!(
        cfg.scheduling_choice,
        Some(SchedulingChoice::SequenceBatching(_))
    );
    if matches!(
        cfg.scheduling_choice,
        Some(SchedulingChoice::EnsembleScheduling(_))
    ) {
        return Err(Error::Usage(
            "an ensemble has no scheduler of its own to tune; tune its composing models".into(),
        ));
    }
    let sizes: Vec<Option<u32>> = if current == 0 || limit == 0 {
        vec![None]
    } else {
        sizes_up_to(limit).into_iter().map(Some).collect()
    };
    let mut settings = Vec::new();
    for mbs in sizes {
        let preferred = |m: Option<u32>| -> Vec<Option<Vec<u32>>> {
            match m {
                Some(m) if m >= 4 => {
                    vec![
                        None,
                        Some(sizes_up_to(m).into_iter().filter(|&b| b >= 2).collect()),
                    ]
                }
                _ => vec![None],
            }
        };
        if sequence {
            for &d in &delays {
                settings.push(Setting {
                    max_batch_size: mbs,
                    strategy: Strategy::Direct,
                    preferred_batch_size: None,
                    max_queue_delay_microseconds: d,
                });
            }
            let base = mbs.unwrap_or(1).max(1);
            for k in [base, 2 * base, 4 * base] {
                for p in preferred(mbs) {
                    for &d in &delays {
                        settings.push(Setting {
                            max_batch_size: mbs,
                            strategy: Strategy::Oldest {
                                max_candidate_sequences: k,
                            },
                            preferred_batch_size: p.clone(),
                            max_queue_delay_microseconds: d,
                        });
                    }
                }
            }
        } else if mbs.is_none() {
            settings.push(Setting {
                max_batch_size: None,
                strategy: Strategy::Kept,
                preferred_batch_size: None,
                max_queue_delay_microseconds: 0,
            });
        } else {
            for p in preferred(mbs) {
                for &d in &delays {
                    settings.push(Setting {
                        max_batch_size: mbs,
                        strategy: Strategy::Dynamic,
                        preferred_batch_size: p.clone(),
                        max_queue_delay_microseconds: d,
                    });
                }
            }
        }
    }
    if settings.len() > MAX_SETTINGS {
        return Err(Error::Usage(format!(
            "the search space has {} settings (from --queue-delays and --max-batch-size); at most {MAX_SETTINGS} are searched",
            settings.len()
        )));
    }
    Ok(Space {
        settings,
        max_instances: opts.max_instances,
    })
}

fn list(v: &[u32]) -> String {
    let items: Vec<String> = v.iter().map(u32::to_string).collect();
    format!("[ {} ]", items.join(", "))
}

/// `value` at `path`, or the field removed when `value` is 0 (the
/// default, so no line is added for it).
fn set_or_clear(src: &str, path: &str, value: u64) -> Result<String, edit::EditError> {
    if value == 0 {
        edit::remove(src, &steps(path))
    } else {
        edit::set(src, &steps(path), &value.to_string())
    }
}

/// The config text of `setting` with `count` instances: `src` (the config
/// as written) with the searched fields edited in place.
pub fn config_text(src: &str, setting: &Setting, count: u32) -> Result<String, edit::EditError> {
    let mut t = src.to_string();
    if let Some(m) = setting.max_batch_size {
        t = edit::set(&t, &steps("max_batch_size"), &m.to_string())?;
    }
    t = edit::set(&t, &steps("instance_group#0.count"), &count.to_string())?;
    let delay = setting.max_queue_delay_microseconds;
    let preferred = |t: &str, path: &str| match &setting.preferred_batch_size {
        Some(p) => edit::set(t, &steps(path), &list(p)),
        None => edit::remove(t, &steps(path)),
    };
    match setting.strategy {
        Strategy::Kept => {}
        Strategy::Dynamic => {
            t = edit::ensure(&t, &steps("dynamic_batching"))?;
            t = set_or_clear(&t, "dynamic_batching.max_queue_delay_microseconds", delay)?;
            t = preferred(&t, "dynamic_batching.preferred_batch_size")?;
        }
        Strategy::Direct => {
            t = edit::remove(&t, &steps("sequence_batching.oldest"))?;
            t = set_or_clear(
                &t,
                "sequence_batching.direct.max_queue_delay_microseconds",
                delay,
            )?;
        }
        Strategy::Oldest {
            max_candidate_sequences,
        } => {
            t = edit::remove(&t, &steps("sequence_batching.direct"))?;
            t = edit::set(
                &t,
                &steps("sequence_batching.oldest.max_candidate_sequences"),
                &max_candidate_sequences.to_string(),
            )?;
            t = set_or_clear(
                &t,
                "sequence_batching.oldest.max_queue_delay_microseconds",
                delay,
            )?;
            t = preferred(&t, "sequence_batching.oldest.preferred_batch_size")?;
        }
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dynamic_model_gets_its_fields_edited_in_place() {
        let src = "name: \"m\" # the model\nmax_batch_size: 8\ninstance_group [ { count: 1 kind: KIND_CPU } ]\n";
        let s = Setting {
            max_batch_size: Some(4),
            strategy: Strategy::Dynamic,
            preferred_batch_size: Some(vec![2, 4]),
            max_queue_delay_microseconds: 500,
        };
        assert_eq!(
            config_text(src, &s, 3).unwrap(),
            "name: \"m\" # the model\nmax_batch_size: 4\ninstance_group [ { count: 3 kind: KIND_CPU } ]\n\
             dynamic_batching { max_queue_delay_microseconds: 500 preferred_batch_size: [ 2, 4 ] }\n"
        );
    }

    #[test]
    fn the_space_follows_the_scheduler() {
        let cfg = ModelConfig {
            max_batch_size: 8,
            ..ModelConfig::default()
        };
        let opts = SpaceOptions {
            max_instances: 4,
            max_batch_size: None,
            delays_us: vec![0, 100],
        };
        let s = space(&cfg, &opts).unwrap();
        // max_batch_size 1, 2, 4, 8; preferred none (and a list from 4);
        // two delays.
        assert_eq!(s.settings.len(), (1 + 1 + 2 + 2) * 2);
        assert_eq!(s.grid(), s.settings.len() * 4);
        let cfg = ModelConfig::default();
        let s = space(&cfg, &opts).unwrap();
        assert_eq!(s.settings.len(), 1);
        assert_eq!(s.settings[0].strategy, Strategy::Kept);
    }
}
