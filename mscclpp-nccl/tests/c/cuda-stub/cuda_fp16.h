/* Empty: nccl.h includes it but its host API uses none of its types. */
