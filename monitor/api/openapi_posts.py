"""The OpenAPI description of incident posts: made on a status page with their first update,
listed per page (newest first), read, changed, given updates until resolved, deleted."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode

from monitor.domain.schemas import posts as models

if TYPE_CHECKING:  # openapi.py imports this module for its MODELS
    from monitor.api.openapi import _Builder as Builder

MODELS: list[tuple[type[BaseModel], JsonSchemaMode]] = [
    *((m, "validation") for m in (models.PostCreate, models.PostPatch, models.UpdateCreate)),
    *((m, "serialization") for m in (models.Post, models.PostList)),
]
EXAMPLE: dict[str, Any] = {
    "title": "Slow checkouts", "impact": "minor", "groups": ["Website"],
    "update": {"state": "investigating", "text": "We are looking into **slow** checkouts."},
}  # fmt: skip
UPDATE_EXAMPLE = {"state": "resolved", "text": "Fixed: a full disk on the payment gateway."}


def add_posts(b: Builder) -> None:
    from monitor.api.openapi import CURSOR, LIMIT, LOCATION, _id, _json, _links

    r, page_id, post_id = b.refs, _id("status page"), _id("post")
    # fmt: off
    b.add("post", "/api/v1/status-pages/{id}/posts", "createPost",
          "Post about an incident on a status page, with its first update (editor and up; 422 naming "
          "`monitor_ids.<i>` or `groups.<i>` for what the page does not show)", tag="status-pages",
          ok={201: {**_json(r["Post"], "The post, as made.", LOCATION),
                    "links": _links("getPost", "updatePost", "deletePost", "addPostUpdate")}},
          errors=(404, 409), parameters=(page_id,), body=("PostCreate", EXAMPLE))
    b.add("get", "/api/v1/status-pages/{id}/posts", "listPosts", "A status page's posts, newest first",
          tag="status-pages", ok={200: _json(r["PostList"], "One page of posts.")}, errors=(400, 404),
          parameters=(page_id, LIMIT, CURSOR))
    b.add("get", "/api/v1/posts/{id}", "getPost", "Read a post and its updates", tag="status-pages",
          ok={200: _json(r["Post"], "The post.")}, errors=(404,), parameters=(post_id,))
    b.add("patch", "/api/v1/posts/{id}", "updatePost",
          "Change a post's title, impact or what it affects (only the fields given)", tag="status-pages",
          ok={200: _json(r["Post"], "The post, as changed.")}, errors=(404,), parameters=(post_id,),
          body=("PostPatch", {"impact": "major"}))
    b.add("delete", "/api/v1/posts/{id}", "deletePost", "Delete a post and its updates", tag="status-pages",
          ok={204: {"description": "Deleted."}}, errors=(404,), parameters=(post_id,))
    b.add("post", "/api/v1/posts/{id}/updates", "addPostUpdate",
          "Add an update to a post's timeline (its state becomes the post's; 409 `resolved` naming "
          "`state` once the post is resolved)", tag="status-pages",
          ok={201: _json(r["Post"], "The post, with the update.")}, errors=(404, 409),
          parameters=(post_id,), body=("UpdateCreate", UPDATE_EXAMPLE))
    slug = {"name": "slug", "in": "path", "required": True, "description": "the page's slug",
            "schema": {"type": "string"}}
    shown = {"name": "post_id", "in": "path", "required": True, "description": "the post's id",
             "schema": {"type": "string"}}
    html = {"content": {"text/html": {"schema": {"type": "string"}}}}
    b.add("get", "/status/{slug}/posts/{post_id}", "getPostPage",
          "An incident post's permalink page (HTML, no script)", tag="public", public=True, errors=(503,),
          parameters=(slug, shown),
          ok={200: {**html, "description": "The post and its updates; cached (ETag, Cache-Control)."},
              304: {"description": "Not modified (If-None-Match)."},
              404: {**html, "description": "No such status page or post."}})
    # fmt: on
