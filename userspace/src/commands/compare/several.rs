//! A comparison's flag that names one value of a concept, a list of them (`--steer
//! none,rps,cpumap`), or with one more word several side by side (`--steer all`, `--proto
//! both`, `--xdp-mode both`). The values are the concept's
//! one enum (records' names); the extra word is the parser's, not a second enum's variant.
use clap::{
    builder::{PossibleValue, PossibleValuesParser, TypedValueParser},
    ValueEnum,
};

/// The values a flag asked for, in the order the arms run them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Several<T>(pub Vec<T>);

/// clap's parser for [`Several`]: each value of `T` but those in `except`, and `word` for
/// `values` together.
#[derive(Clone)]
pub struct SeveralParser<T: 'static> {
    word: &'static str,
    help: &'static str,
    values: &'static [T],
    except: &'static [T],
}

/// `word` stands for `values` (said in `help`); `except` are values of `T` the flag refuses.
pub fn several<T>(
    word: &'static str,
    help: &'static str,
    values: &'static [T],
    except: &'static [T],
) -> SeveralParser<T> {
    SeveralParser {
        word,
        help,
        values,
        except,
    }
}

impl<T: ValueEnum + PartialEq> SeveralParser<T> {
    fn possible(&self) -> impl Iterator<Item = PossibleValue> + '_ {
        T::value_variants()
            .iter()
            .filter(|v| !self.except.contains(v))
            .filter_map(ValueEnum::to_possible_value)
            .chain(std::iter::once(
                PossibleValue::new(self.word).help(self.help),
            ))
    }
}

impl<T: ValueEnum + PartialEq + Clone + Send + Sync + 'static> TypedValueParser
    for SeveralParser<T>
{
    type Value = Several<T>;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Several<T>, clap::Error> {
        // A list (`rps,cpumap`) is its values in the order given, each said once.
        let mut all: Vec<T> = Vec::new();
        for part in value.to_string_lossy().split(',') {
            // clap's own check first, so a wrong value gets clap's line with every accepted one.
            let name = PossibleValuesParser::new(self.possible()).parse_ref(
                cmd,
                arg,
                std::ffi::OsStr::new(part),
            )?;
            let these = if name == self.word {
                self.values.to_vec()
            } else {
                vec![T::from_str(&name, false).expect("a possible value is a value of T")]
            };
            for v in these {
                if !all.contains(&v) {
                    all.push(v);
                }
            }
        }
        Ok(Several(all))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.possible()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rxsteer_records::{Mode, ObserverChoice};

    #[derive(clap::Parser, Debug)]
    struct Cli {
        #[arg(long, default_value = "all", value_parser = several("all", "every mode", Mode::ALL, &[]))]
        steer: Several<Mode>,
        #[arg(long, default_value = "auto", value_parser = several(
            "all", "both", &[ObserverChoice::Tracepoint, ObserverChoice::Xdp], &[ObserverChoice::Off]))]
        observer: Several<ObserverChoice>,
    }

    fn parse(argv: &[&str]) -> Result<Cli, clap::Error> {
        <Cli as clap::Parser>::try_parse_from(std::iter::once("t").chain(argv.iter().copied()))
    }

    #[test]
    fn one_value_or_the_word_for_several() {
        let c = parse(&[]).unwrap();
        assert_eq!(c.steer.0, Mode::ALL);
        assert_eq!(c.observer.0, [ObserverChoice::Auto]);
        let c = parse(&["--steer", "rps", "--observer", "all"]).unwrap();
        assert_eq!(c.steer.0, [Mode::Rps]);
        assert_eq!(
            c.observer.0,
            [ObserverChoice::Tracepoint, ObserverChoice::Xdp]
        );
        let off = parse(&["--observer", "off"]).unwrap_err().to_string();
        assert!(
            off.contains("invalid value 'off' for '--observer <OBSERVER>'")
                && off.contains("[possible values: auto, tracepoint, xdp, all]"),
            "{off}"
        );
        assert!(parse(&["--steer", "fast"]).is_err());
        let c = parse(&["--steer", "none,cpumap,rps,none"]).unwrap();
        assert_eq!(c.steer.0, [Mode::None, Mode::Cpumap, Mode::Rps]);
        let bad = parse(&["--steer", "rps,fast"]).unwrap_err().to_string();
        assert!(bad.contains("invalid value 'fast' for '--steer"), "{bad}");
    }
}
