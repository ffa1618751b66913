//! The embedder of query text for the run being served: the one the caller configured, else
//! one built for the model the run's manifest names (and kept while runs keep needing it).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::hash::HASH_MODEL;
use super::hash_v1::HASH_V1_MODEL;
use super::settings::{load_minilm, model_path_from_env};
use super::{Embedder, EmbedderIdentity, HashEmbedder, HashEmbedderV1, LongTexts, MINILM_MODEL};
use crate::error::{EngineError, Result};
use crate::query::QueryInput;

/// Chooses and holds the query embedder of an [`Engine`](crate::Engine), and checks every
/// query vector against the run's [`EmbedderIdentity`] before it is compared with the run's
/// vectors.
#[derive(Debug)]
pub struct QueryEmbedder {
    /// The embedder the caller configured, used for every run.
    configured: Option<Arc<dyn Embedder>>,
    /// all-MiniLM-L6-v2's folder when a run needs it and none is configured (`None`:
    /// `EMBEDDING_MODEL_PATH`, else the default location).
    model_path: Option<PathBuf>,
    /// The embedder built for the last run that needed one.
    built: Mutex<Option<Arc<dyn Embedder>>>,
}

impl QueryEmbedder {
    /// A chooser that uses `configured` when given, else builds the embedder each run's
    /// manifest names (MiniLM from `model_path`, see [`QueryEmbedder`]).
    pub fn new(configured: Option<Arc<dyn Embedder>>, model_path: Option<PathBuf>) -> Self {
        Self {
            configured,
            model_path,
            built: Mutex::new(None),
        }
    }

    /// The embedder for text queries on a run embedded by `run`: the configured one, else one
    /// built for the run's model (kept while runs keep needing the same model and dimension).
    /// Its identity is not yet checked against `run` (see [`embed`](Self::embed)).
    ///
    /// # Errors
    /// [`EngineError::EmbedderUnavailable`] when the run's model is one this build cannot
    /// run, or cannot be loaded here (the load error is its source);
    /// [`EngineError::Internal`] when the cache lock is poisoned.
    pub fn for_run(&self, run: &EmbedderIdentity) -> Result<Arc<dyn Embedder>> {
        if let Some(e) = &self.configured {
            return Ok(e.clone());
        }
        let mut built = self
            .built
            .lock()
            .map_err(|_| EngineError::Internal("query embedder lock poisoned".into()))?;
        if let Some(e) = built.as_ref()
            && e.identity().is_compatible(run)
        {
            return Ok(e.clone());
        }
        let unavailable = |source: Option<EngineError>| EngineError::EmbedderUnavailable {
            model: run.model.clone(),
            dim: run.dim,
            source: source.map(Box::new),
        };
        let e: Arc<dyn Embedder> = if run.model == HASH_MODEL {
            Arc::new(HashEmbedder::new(run.dim))
        } else if run.model == HASH_V1_MODEL {
            Arc::new(HashEmbedderV1::new(run.dim))
        } else if run.model == MINILM_MODEL {
            let dir = self.model_path.clone().unwrap_or_else(model_path_from_env);
            // Questions fit one window: the long-text policy does not change them.
            load_minilm(&dir, LongTexts::default()).map_err(|e| unavailable(Some(e)))?
        } else {
            return Err(unavailable(None));
        };
        *built = Some(e.clone());
        Ok(e)
    }

    /// The query as a vector of the run's space: a given vector checked against the run's
    /// model and dimension, or text embedded by [`for_run`](Self::for_run)'s embedder once
    /// its identity matches the run's.
    ///
    /// # Errors
    /// [`EngineError::EmbedderMismatch`] when the model or dimension differs from `run`'s;
    /// [`EngineError::EmbedderWeightsMismatch`] when the weights fingerprints differ;
    /// [`EngineError::Embedder`] when the embedder fails or returns another length; as
    /// [`for_run`](Self::for_run).
    pub fn embed(&self, run: &EmbedderIdentity, input: &QueryInput) -> Result<Vec<f32>> {
        let mismatch = |model: &str, dim: usize| EngineError::EmbedderMismatch {
            run_model: run.model.clone(),
            run_dim: run.dim,
            query_model: model.to_owned(),
            query_dim: dim,
        };
        match input {
            QueryInput::Vector { model, vector } => {
                if *model != run.model || vector.len() != run.dim {
                    return Err(mismatch(model, vector.len()));
                }
                Ok(vector.clone())
            }
            QueryInput::Text(text) => {
                let embedder = self.for_run(run)?;
                let id = embedder.identity();
                if !id.is_compatible(run) {
                    return Err(mismatch(&id.model, id.dim));
                }
                if !id.same_weights(run) {
                    return Err(EngineError::EmbedderWeightsMismatch {
                        model: run.model.clone(),
                        run_fingerprint: run.fingerprint.clone(),
                        query_fingerprint: id.fingerprint.clone(),
                    });
                }
                let v = embedder.embed(text)?;
                if v.len() != run.dim {
                    return Err(EngineError::embedder(
                        id.model.clone(),
                        format!("returned {} values, expected {}", v.len(), run.dim),
                    ));
                }
                Ok(v)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(model: &str, dim: usize) -> EmbedderIdentity {
        EmbedderIdentity {
            model: model.to_owned(),
            dim,
            normalized: true,
            fingerprint: String::new(),
        }
    }

    #[test]
    fn builds_the_runs_hash_embedder_and_checks_given_vectors() {
        let q = QueryEmbedder::new(None, None);
        let v = q
            .embed(
                &run(HASH_MODEL, 16),
                &QueryInput::Text("statin therapy".into()),
            )
            .unwrap();
        assert_eq!(v, HashEmbedder::new(16).embed("statin therapy").unwrap());
        let wrong = QueryInput::Vector {
            model: HASH_MODEL.into(),
            vector: vec![0.0; 8],
        };
        assert!(matches!(
            q.embed(&run(HASH_MODEL, 16), &wrong),
            Err(EngineError::EmbedderMismatch { query_dim: 8, .. })
        ));
    }

    #[test]
    fn an_unknown_model_is_unavailable_and_a_configured_one_must_match() {
        let q = QueryEmbedder::new(None, None);
        let e = q
            .embed(&run("someone/else", 16), &QueryInput::Text("x y".into()))
            .unwrap_err();
        assert!(
            matches!(e, EngineError::EmbedderUnavailable { ref model, .. } if model == "someone/else")
        );
        let configured = QueryEmbedder::new(Some(Arc::new(HashEmbedder::new(8))), None);
        let e = configured
            .embed(&run(HASH_MODEL, 16), &QueryInput::Text("x y".into()))
            .unwrap_err();
        assert!(matches!(
            e,
            EngineError::EmbedderMismatch { query_dim: 8, .. }
        ));
    }

    #[test]
    fn a_model_that_cannot_be_loaded_keeps_its_cause() {
        let missing = std::env::temp_dir().join("agrag-no-model-here");
        let q = QueryEmbedder::new(None, Some(missing));
        let e = q
            .embed(&run(MINILM_MODEL, 384), &QueryInput::Text("x y".into()))
            .unwrap_err();
        let source = std::error::Error::source(&e).expect("the load error as the source");
        assert!(
            !source.to_string().is_empty(),
            "{e}: the cause is kept, not flattened"
        );
    }
}
