//! Correlation of a new value with its old counterpart on update (apiserver's `CorrelatedObject`): object
//! fields by key, items of `x-kubernetes-list-type: map` lists by their key fields. Items of sets and atomic
//! lists have no old counterpart. Used for `oldSelf` in CEL and for ratcheting.

use serde_json::Value;

use super::schema::{ListType, SchemaNode};

/// The old item of list `old_list` (whose schema is `list`) that `item` corresponds to, if the list is a
/// map list and an old item has the same key values.
pub fn list_item<'a>(list: &SchemaNode, old_list: &'a Value, item: &Value) -> Option<&'a Value> {
    let ListType::Map(keys) = &list.list_type else {
        return None;
    };
    let item = item.as_object()?;
    old_list.as_array()?.iter().find(|old| {
        old.as_object()
            .is_some_and(|old| keys.iter().all(|k| old.get(k) == item.get(k)))
    })
}

/// Where a node stands for ratcheting (`ratchetingOptions` in the CEL validator): errors of a node are
/// ratcheted when its correlated old value is equal, or, for a node that cannot be correlated, when the
/// nearest correlated ancestor is unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ratchet {
    /// Create, or below `apiVersion`/`kind`: nothing is ratcheted.
    Off,
    /// The node has an old value; `equal` says whether it is unchanged.
    Correlated {
        /// The node equals its old value.
        equal: bool,
    },
    /// The node has no old counterpart; `parent_equal` is the nearest correlated ancestor's equality.
    Uncorrelated {
        /// The nearest correlated ancestor equals its old value.
        parent_equal: bool,
    },
}

impl Ratchet {
    /// The state at the root of an update.
    pub fn root(new: &Value, old: Option<&Value>) -> Self {
        match old {
            Some(old) => Ratchet::Correlated { equal: new == old },
            None => Ratchet::Off,
        }
    }

    /// The state of a child whose old counterpart is `old_child` (None when it cannot be correlated).
    pub fn child(self, new_child: &Value, old_child: Option<&Value>) -> Self {
        match self {
            Ratchet::Off => Ratchet::Off,
            Ratchet::Correlated { equal } => match old_child {
                Some(old) => Ratchet::Correlated {
                    equal: old == new_child,
                },
                None => Ratchet::Uncorrelated { parent_equal: equal },
            },
            uncorrelated @ Ratchet::Uncorrelated { .. } => uncorrelated,
        }
    }

    /// Whether errors raised at this node become warnings.
    pub fn should_ratchet(self) -> bool {
        match self {
            Ratchet::Off => false,
            Ratchet::Correlated { equal } => equal,
            Ratchet::Uncorrelated { parent_equal } => parent_equal,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn map_lists_correlate_by_key() {
        let node = SchemaNode::compile(
            &json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "properties": {"name": {"type": "string"}, "v": {"type": "integer"}}}}),
        )
        .expect("compiles");
        let old = json!([{"name": "a", "v": 1}, {"name": "b", "v": 2}]);
        assert_eq!(
            list_item(&node, &old, &json!({"name": "b", "v": 9})),
            Some(&json!({"name": "b", "v": 2}))
        );
        assert_eq!(list_item(&node, &old, &json!({"name": "c"})), None);
        let atomic = SchemaNode::compile(&json!({"type": "array", "items": {"type": "object"}})).expect("compiles");
        assert_eq!(list_item(&atomic, &old, &json!({"name": "a", "v": 1})), None);
    }

    #[test]
    fn ratchet_follows_the_nearest_correlated_ancestor() {
        let root = Ratchet::root(&json!({"a": 1}), Some(&json!({"a": 1})));
        assert!(root.should_ratchet());
        let orphan = root.child(&json!(1), None);
        assert!(
            orphan.should_ratchet(),
            "an uncorrelatable child of an unchanged parent is ratcheted"
        );
        assert!(!Ratchet::root(&json!({}), None).should_ratchet());
        assert!(!root.child(&json!(2), Some(&json!(1))).should_ratchet());
    }
}
