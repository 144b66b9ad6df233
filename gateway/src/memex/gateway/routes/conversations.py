"""Conversations: list, replay, delete."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Path, Query, Request, Response

from memex.gateway import convert
from memex.gateway.deps import ERRORS, ClientsDep
from memex.gateway.models.conversations import ConversationDetail, ConversationList
from memex.gateway.security import SensitiveReplies, TenantDep, caller, sensitive_grant
from memex.orchestrator.v1 import orchestrator_pb2 as opb

router = APIRouter(
    prefix="/v1/conversations",
    tags=["conversations"],
    dependencies=[Depends(caller)],
    responses=ERRORS,
)
ConversationId = Path(min_length=1, max_length=128, description="A conversation id.")


@router.get("", response_model=ConversationList, summary="List conversations")
async def list_conversations(
    c: ClientsDep,
    tenant: TenantDep,
    limit: int = Query(50, ge=1, le=1000),
) -> ConversationList:
    """Conversations, most recently updated first."""
    reply = await c.orchestrator.ListConversations(
        opb.ListConversationsRequest(tenant=tenant, limit=limit)
    )
    return ConversationList(conversations=[convert.conversation(x) for x in reply.conversations])


@router.get("/{conversation_id}", response_model=ConversationDetail, summary="Replay one")
async def get_conversation(
    c: ClientsDep,
    tenant: TenantDep,
    request: Request,
    conversation_id: str = ConversationId,
    include_sensitive: SensitiveReplies = False,
) -> ConversationDetail:
    """A conversation with its messages and their citations; 404 for an unknown id."""
    reply = await c.orchestrator.GetConversation(
        opb.GetConversationRequest(
            tenant=tenant,
            conversation_id=conversation_id,
            include_sensitive=sensitive_grant(request, include_sensitive),
        )
    )
    return ConversationDetail(
        conversation=convert.conversation(reply.conversation),
        messages=[convert.message(m) for m in reply.messages],
    )


@router.delete("/{conversation_id}", status_code=204, response_class=Response, summary="Forget one")
async def delete_conversation(
    c: ClientsDep,
    tenant: TenantDep,
    conversation_id: str = ConversationId,
) -> Response:
    """Deletes a conversation with its messages; 404 for an unknown id."""
    await c.orchestrator.DeleteConversation(
        opb.DeleteConversationRequest(tenant=tenant, conversation_id=conversation_id)
    )
    return Response(status_code=204)
