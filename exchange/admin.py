from __future__ import annotations

from django.contrib import admin

from exchange.models import Identity, Packet, PacketItem, Peer


@admin.register(Identity)
class IdentityAdmin(admin.ModelAdmin):
    list_display = ("owner", "name", "key_id", "created_at")
    # The encrypted private key is never shown or edited here.
    exclude = ("private_key",)
    readonly_fields = ("owner", "key_id", "public_key", "created_at")


@admin.register(Peer)
class PeerAdmin(admin.ModelAdmin):
    list_display = ("owner", "key_id", "name", "state", "first_seen_at", "decided_at")
    list_filter = ("state",)
    readonly_fields = ("owner", "key_id", "public_key", "first_seen_at", "decided_at", "state")


class PacketItemInline(admin.TabularInline):
    model = PacketItem
    extra = 0
    fields = ("position", "abstract_id", "result", "gate", "reason", "fitness", "engram", "trial")
    readonly_fields = fields
    can_delete = False


@admin.register(Packet)
class PacketAdmin(admin.ModelAdmin):
    list_display = ("packet_id", "owner", "direction", "status", "gate", "key_id", "received_at")
    list_filter = ("direction", "status", "gate")
    exclude = ("raw",)
    readonly_fields = (
        "owner", "direction", "packet_id", "digest", "peer", "key_id", "sender_name",
        "created_at", "received_at", "processed_at", "status", "gate", "reasons", "item_count",
    )  # fmt: skip
    inlines = (PacketItemInline,)
