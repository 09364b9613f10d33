"""What models read: the Arrow views of the panel (tabular, tuple windows) and the imputed
tabular view. The service's own reads (boards, disclosure, the console) are app/read."""
