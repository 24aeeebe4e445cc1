-- holder: the caller holds the lease: its endpoint, its owner string, and the fence.
t.endpoint_id = %(endpoint_id)s AND t.owner = %(owner)s AND @{fence}
