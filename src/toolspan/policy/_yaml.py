"""YAML policies (PyYAML, ``toolspan[policy]``): the safe loader, without anchors, aliases or merge keys
(an alias bomb expands a few lines into gigabytes), and with duplicate keys refused (a later ``rules`` would
silently hide the first)."""

from __future__ import annotations

from typing import Any

from toolspan.errors import PolicyError

__all__ = ["load_yaml"]


def _loader_class() -> Any:
    try:
        import yaml
    except ImportError:
        return None

    class StrictLoader(yaml.SafeLoader):  # type: ignore[misc]
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise yaml.composer.ComposerError(
                    None, None, "aliases are not allowed in a policy", event.start_mark
                )
            event = self.peek_event()
            if getattr(event, "anchor", None) is not None:
                raise yaml.composer.ComposerError(
                    None, None, "anchors are not allowed in a policy", event.start_mark
                )
            return super().compose_node(parent, index)

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    raise yaml.constructor.ConstructorError(
                        None, None, "merge keys (<<) are not allowed in a policy", key_node.start_mark
                    )
                key = self.construct_object(key_node, deep=True)
                try:
                    duplicate = key in seen
                    seen.add(key)
                except TypeError:
                    continue  # an unhashable key: the constructor reports it
                if duplicate:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r:.60}", key_node.start_mark
                    )
            return super().construct_mapping(node, deep=deep)

    return StrictLoader


def load_yaml(text: str, name: str) -> Any:
    """The document in ``text``; every problem a one-line ``PolicyError`` naming ``name`` and the line."""
    loader = _loader_class()
    if loader is None:
        raise PolicyError(
            f"{name}: YAML policies need PyYAML (the policy extra; in a checkout of toolspan:"
            " pip install '.[policy]'), or use JSON"
        )
    import yaml

    try:
        return yaml.load(text, Loader=loader)  # a SafeLoader subclass
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{name}:{mark.line + 1}" if mark is not None else name
        problem = " ".join(str(getattr(e, "problem", None) or e).split())
        raise PolicyError(f"{where}: not valid YAML: {problem}") from None
    except RecursionError:
        raise PolicyError(f"{name}: nested too deeply") from None
    except (ValueError, OverflowError) as e:  # an integer too long to convert, ...
        raise PolicyError(f"{name}: not a usable YAML document: {' '.join(str(e).split())[:200]}") from None
