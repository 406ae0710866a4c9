"""Input and output serializers for a tenant's people (T4)."""

from rest_framework import serializers

from accounts.models import User
from asixto.api import StrictSerializer


class UserSerializer(serializers.ModelSerializer):
    invited = serializers.SerializerMethodField(help_text="True until the person chose a password.")

    class Meta:
        model = User
        fields = ["id", "username", "email", "role", "is_active", "invited", "last_login", "date_joined"]

    def get_invited(self, user) -> bool:
        return not user.has_usable_password()


class UserCreateSerializer(StrictSerializer):
    username = serializers.CharField(max_length=150)
    email = serializers.EmailField(required=False, allow_blank=True, default="")
    role = serializers.ChoiceField(choices=User.Role.choices)
    password = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=128, write_only=True,
        help_text="Leave out to invite: the person gets an e-mail with a link to choose a password.",
    )


class UserUpdateSerializer(StrictSerializer):
    email = serializers.EmailField(required=False, allow_blank=True)
    role = serializers.ChoiceField(choices=User.Role.choices, required=False)
    is_active = serializers.BooleanField(required=False, help_text="false removes the person's access at once.")


class UserCreatedSerializer(UserSerializer):
    invitation_sent = serializers.BooleanField(
        read_only=True, allow_null=True, default=None,
        help_text="Whether the invitation e-mail was accepted by the mail server (null: no invitation).",
    )

    class Meta(UserSerializer.Meta):
        fields = UserSerializer.Meta.fields + ["invitation_sent"]
