//! Typed row ids of a [`Snapshot`](super::Snapshot): which table a number indexes is in its
//! type, so a passage row cannot be handed where a document row is meant.
//!
//! Rows are positions in the run's tables (`documents.parquet` order, `passages.parquet`
//! order, …), dense from 0 and valid only within the run that produced them: the same
//! document may have another row in the next run. The public, stable names are the keys
//! (document key, passage id `<key>#<position>`, concept id) and [`CommunityId`], which a run
//! continuing its parent keeps for a community that continues (see `community_lineage`).
//!
//! Each id is a `u32` underneath (`.0`, [`DocumentRow::index`] for slice indexing), as the
//! mapped column files store them.

use std::marker::PhantomData;

macro_rules! row_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        #[repr(transparent)]
        pub struct $name(pub u32);

        impl $name {
            /// The id as a `usize`, to index the run's columns.
            #[must_use]
            pub const fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl From<u32> for $name {
            fn from(v: u32) -> Self {
                Self(v)
            }
        }

        impl From<$name> for u32 {
            fn from(v: $name) -> u32 {
                v.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

row_id!(
    /// A document's row: its position in `documents.parquet` (sorted by document key).
    DocumentRow
);
row_id!(
    /// A passage's row: its position in `passages.parquet` (sorted by document key, then
    /// position), so a document's passages are consecutive rows.
    PassageRow
);
row_id!(
    /// An entity (a node of the entity graph): its `entity_id`, which is also its row of
    /// `entities.parquet`.
    EntityId
);
row_id!(
    /// A community's row: its position in `communities.parquet` (sorted by `community_id`).
    /// Not the public id; see [`CommunityId`].
    CommunityRow
);
row_id!(
    /// A community's public id (`community_id`, the `theme_id` of answers): stable across
    /// runs for a community that continues its parent run's.
    CommunityId
);
row_id!(
    /// A vocabulary concept's row: its position in `concepts.parquet` (sorted by concept id).
    /// The concept id itself (a MeSH descriptor UI such as `D002318`) is a string.
    ConceptRow
);

/// An ascending list of rows of one kind read in place from the run (the members of a
/// community, the passages mentioning an entity, …).
#[derive(Debug, Clone, Copy)]
pub struct Rows<'a, T> {
    raw: &'a [u32],
    kind: PhantomData<T>,
}

impl<'a, T: From<u32> + Into<u32> + Copy> Rows<'a, T> {
    pub(crate) fn new(raw: &'a [u32]) -> Self {
        Self {
            raw,
            kind: PhantomData,
        }
    }

    /// How many rows.
    #[must_use]
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    /// Whether there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// The `i`-th row, if any.
    #[must_use]
    pub fn get(&self, i: usize) -> Option<T> {
        self.raw.get(i).map(|&r| T::from(r))
    }

    /// Whether `row` is among them (binary search: the rows ascend).
    #[must_use]
    pub fn contains(&self, row: T) -> bool {
        self.raw.binary_search(&row.into()).is_ok()
    }

    /// The rows in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = T> + DoubleEndedIterator + 'a {
        self.raw.iter().map(|&r| T::from(r))
    }

    /// The rows as the `u32`s stored in the run (for bitmaps and bulk work).
    #[must_use]
    pub fn as_u32s(&self) -> &'a [u32] {
        self.raw
    }
}

impl<'a, T: From<u32> + Into<u32> + Copy + 'a> IntoIterator for Rows<'a, T> {
    type Item = T;
    type IntoIter = std::iter::Map<std::iter::Copied<std::slice::Iter<'a, u32>>, fn(u32) -> T>;

    fn into_iter(self) -> Self::IntoIter {
        self.raw.iter().copied().map(T::from as fn(u32) -> T)
    }
}
